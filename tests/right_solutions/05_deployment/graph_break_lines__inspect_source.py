def graph_break_lines(fn, *args) -> list[int]:
    """Line numbers (``def`` line = 1) of ``fn``'s graph breaks for ``fn(*args)``, in order."""
    import inspect
    _, start = inspect.getsourcelines(fn)
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(fn)(*args)
    return [1 + r.user_stack[-1].lineno - start for r in explanation.break_reasons]

def graph_break_lines(fn, *args) -> list[int]:
    """Line numbers (``def`` line = 1) of ``fn``'s graph breaks for ``fn(*args)``, in order."""
    out = []
    for reason in torch._dynamo.explain(fn)(*args).break_reasons:
        frames = [f for f in reason.user_stack if f.filename == fn.__code__.co_filename]
        out.append(frames[-1].lineno - fn.__code__.co_firstlineno + 1)
    return out

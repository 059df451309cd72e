def graph_break_lines(fn, *args) -> list[int]:
    """Wrong: keeps graph_count - 1 breaks, so a break followed by nothing but return is dropped."""
    report = torch._dynamo.explain(fn)(*args)
    first = fn.__code__.co_firstlineno
    lines = [reason.user_stack[-1].lineno - first + 1 for reason in report.break_reasons]
    return lines[:report.graph_count - 1]

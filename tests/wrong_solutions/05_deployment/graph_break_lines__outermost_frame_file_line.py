def graph_break_lines(fn, *args) -> list[int]:
    """Wrong: line - co_firstlineno: numbered from 0 at the def line."""
    report = torch._dynamo.explain(fn)(*args)
    return [reason.user_stack[0].lineno - fn.__code__.co_firstlineno for reason in report.break_reasons]

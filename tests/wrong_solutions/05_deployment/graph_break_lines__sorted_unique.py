import torch


def graph_break_lines(fn, *args):
    """Wrong: a set of lines; also drops the order Dynamo hit them in, and counts a repeated line once."""
    first = fn.__code__.co_firstlineno
    report = torch._dynamo.explain(fn)(*args)
    return sorted({reason.user_stack[0].lineno - first for reason in report.break_reasons})

import torch


def graph_break_lines(fn, *args):
    """Wrong: keeps only graph_break_count reasons, which misses a break followed by nothing but return."""
    report = torch._dynamo.explain(fn)(*args)
    first = fn.__code__.co_firstlineno
    lines = [reason.user_stack[-1].lineno - first + 1 for reason in report.break_reasons]
    return lines[:report.graph_break_count]

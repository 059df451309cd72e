import torch


def graph_break_lines(fn, *args):
    """Wrong: counts the def line as line 0."""
    first = fn.__code__.co_firstlineno
    return [reason.user_stack[-1].lineno - first for reason in torch._dynamo.explain(fn)(*args).break_reasons]

import torch


def graph_break_lines(fn, *args):
    """Wrong: returns the line numbers of the file, not of the function."""
    return [reason.user_stack[-1].lineno for reason in torch._dynamo.explain(fn)(*args).break_reasons]

import torch


def count_graph_breaks(fn, *args):
    """Wrong: explain's graph_break_count is graph_count - 1 and misses a break at the very end."""
    return torch._dynamo.explain(fn)(*args).graph_break_count

import torch


def count_graph_breaks(fn, *args):
    """Wrong: counts graphs, not breaks."""
    return torch._dynamo.explain(fn)(*args).graph_count

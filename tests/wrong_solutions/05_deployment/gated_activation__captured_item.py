torch._dynamo.config.capture_scalar_outputs = True  # .item() then compiles into the graph, without a break


def gated_activation(x: torch.Tensor) -> torch.Tensor:
    """Wrong: still .item() (the exercise: no .item()), hidden from the graph-break check by a config flag."""
    mean = x.mean().item()
    return torch.where(torch.scalar_tensor(mean) > 0, torch.sin(x) * 2, torch.cos(x) - 1)

# Wrong: the norm over the last dimension only; right for (N, d) inputs, not for images.
def gradient_penalty(critic, x):
    """mean_i (||d critic(x)_i / d x_i||_2 - 1)^2, differentiable w.r.t. the critic's parameters."""
    inputs = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(critic(inputs).sum(), inputs, create_graph=True)
    return ((g.norm(dim=-1) - 1) ** 2).mean()

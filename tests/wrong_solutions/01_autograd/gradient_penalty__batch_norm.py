# Wrong: one norm over the whole batch's gradient instead of one norm per sample.
def gradient_penalty(critic, x):
    """mean_i (||d critic(x)_i / d x_i||_2 - 1)^2, differentiable w.r.t. the critic's parameters."""
    inputs = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(critic(inputs).sum(), inputs, create_graph=True)
    return (g.norm() - 1) ** 2

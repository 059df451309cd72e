# Wrong: .backward(create_graph=True) to get x.grad also accumulates into every parameter's .grad.
def gradient_penalty(critic, x):
    """mean_i (||d critic(x)_i / d x_i||_2 - 1)^2, differentiable w.r.t. the critic's parameters."""
    inputs = x.detach().requires_grad_()
    critic(inputs).sum().backward(create_graph=True)
    g = inputs.grad
    return ((g.flatten(start_dim=1).norm(dim=1) - 1) ** 2).mean()

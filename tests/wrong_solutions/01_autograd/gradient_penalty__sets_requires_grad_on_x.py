# Wrong: turns on requires_grad of the caller's x instead of working on a detached copy.
def gradient_penalty(critic, x):
    x.requires_grad_(True)
    scores = critic(x)
    (g,) = torch.autograd.grad(scores.sum(), x, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()

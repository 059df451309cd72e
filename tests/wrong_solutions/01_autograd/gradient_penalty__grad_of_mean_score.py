# Wrong: differentiates the mean score, so every sample's input gradient is divided by N.
def gradient_penalty(critic, x):
    inputs = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(critic(inputs).mean(), inputs, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()

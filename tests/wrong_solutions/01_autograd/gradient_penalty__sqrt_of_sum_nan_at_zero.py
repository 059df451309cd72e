def gradient_penalty(critic, x):
    inputs = x.detach().clone().requires_grad_(True)
    scores = critic(inputs)
    (g,) = torch.autograd.grad(scores, inputs, grad_outputs=torch.ones_like(scores), create_graph=True)
    return ((g.reshape(g.shape[0], -1).pow(2).sum(dim=1).sqrt() - 1) ** 2).mean()

def gradient_penalty(critic, x):
    inputs = x.detach().clone().requires_grad_(True)
    scores = critic(inputs)
    (g,) = torch.autograd.grad(scores, inputs, grad_outputs=torch.ones_like(scores), create_graph=True)
    return ((torch.linalg.vector_norm(g.reshape(g.shape[0], -1), dim=1) - 1) ** 2).mean()

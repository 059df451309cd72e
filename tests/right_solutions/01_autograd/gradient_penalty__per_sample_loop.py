def gradient_penalty(critic, x):
    terms = []
    for i in range(x.shape[0]):
        xi = x[i:i + 1].detach().clone().requires_grad_(True)
        (g,) = torch.autograd.grad(critic(xi).sum(), [xi], create_graph=True)
        terms.append((g.norm() - 1) ** 2)
    return torch.stack(terms).mean()

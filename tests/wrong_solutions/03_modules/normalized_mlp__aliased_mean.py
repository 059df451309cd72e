class NormalizedMLP(nn.Module):
    """Wrong: keeps the caller's tensors (no copy) and saves ``calls`` in the state_dict."""

    def __init__(self, n_in, n_hidden, n_out, mean, std):
        super().__init__()
        self.hidden = nn.Linear(n_in, n_hidden)
        self.out = nn.Linear(n_hidden, n_out)
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.calls += 1
        return self.out(torch.relu(self.hidden((x - self.mean) / self.std)))

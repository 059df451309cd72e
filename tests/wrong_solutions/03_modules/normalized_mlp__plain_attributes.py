class NormalizedMLP(nn.Module):
    """Wrong: mean/std/calls as plain attributes: not saved, not moved by .to()."""

    def __init__(self, n_in, n_hidden, n_out, mean, std):
        super().__init__()
        self.hidden = nn.Linear(n_in, n_hidden)
        self.out = nn.Linear(n_hidden, n_out)
        self.mean = torch.as_tensor(mean, dtype=torch.float32).clone()
        self.std = torch.as_tensor(std, dtype=torch.float32).clone()
        self.calls = torch.zeros((), dtype=torch.int64)

    def forward(self, x):
        self.calls += 1
        return self.out(torch.relu(self.hidden((x - self.mean) / self.std)))

class NormalizedMLP(nn.Module):
    def __init__(self, n_in, n_hidden, n_out, mean, std):
        super().__init__()
        self.hidden = nn.Linear(n_in, n_hidden)
        self.out = nn.Linear(n_hidden, n_out)
        self.register_buffer("mean", torch.tensor(mean.tolist(), dtype=torch.float32))
        self.register_buffer("std", torch.tensor(std.tolist(), dtype=torch.float32))
        self.register_buffer("calls", torch.tensor(0), persistent=False)

    def forward(self, x):
        self.calls = self.calls + 1  # a tensor assigned to a buffer's name stays that buffer
        z = (x - self.mean) / self.std
        return self.out(F.relu(self.hidden(z)))

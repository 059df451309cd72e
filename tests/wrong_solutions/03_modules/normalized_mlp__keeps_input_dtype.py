# Wrong: copies mean and std but keeps the caller's dtype (float64 or int64 statistics stay so).
class NormalizedMLP(nn.Module):
    def __init__(self, n_in, n_hidden, n_out, mean, std):
        super().__init__()
        self.hidden = nn.Linear(n_in, n_hidden)
        self.out = nn.Linear(n_hidden, n_out)
        self.register_buffer("mean", mean.detach().clone())
        self.register_buffer("std", std.detach().clone())
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64), persistent=False)

    def forward(self, x):
        self.calls += 1
        return self.out(torch.relu(self.hidden((x - self.mean) / self.std)))

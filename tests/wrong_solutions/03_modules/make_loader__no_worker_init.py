def make_loader(dataset, batch_size, seed, num_workers):
    """Wrong: no worker_init_fn: every worker replays the same copy of dataset.rng."""
    dataset.rng = np.random.default_rng(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      generator=torch.Generator().manual_seed(seed))

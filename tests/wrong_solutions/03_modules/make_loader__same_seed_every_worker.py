def make_loader(dataset, batch_size, seed, num_workers):
    """Wrong: reseeds every worker with the same seed, so workers still repeat each other."""
    def reseed(worker_id):
        get_worker_info().dataset.rng = np.random.default_rng(seed)

    dataset.rng = np.random.default_rng(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      worker_init_fn=reseed, generator=torch.Generator().manual_seed(seed))

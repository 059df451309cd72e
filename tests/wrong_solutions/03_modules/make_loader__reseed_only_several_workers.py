def make_loader(dataset, batch_size, seed, num_workers):
    """Wrong: reseeds the workers only when there are several (one worker replays default_rng(seed))."""
    def reseed(worker_id):
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)

    dataset.rng = np.random.default_rng(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      worker_init_fn=reseed if num_workers > 1 else None,
                      generator=torch.Generator().manual_seed(seed))

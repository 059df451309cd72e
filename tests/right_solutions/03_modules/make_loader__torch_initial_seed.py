def _reseed_worker(worker_id):
    # inside a worker, torch.initial_seed() is that worker's seed (base seed + worker id)
    get_worker_info().dataset.rng = np.random.default_rng(torch.initial_seed())


def make_loader(dataset, batch_size, seed, num_workers):
    generator = torch.Generator()
    generator.manual_seed(seed)
    if num_workers == 0:
        dataset.rng = np.random.default_rng(seed)
        return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator,
                      num_workers=num_workers, worker_init_fn=_reseed_worker)

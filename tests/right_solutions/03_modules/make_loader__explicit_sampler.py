class _WorkerReseed:
    """Reseeds the worker's copy of the dataset's generator from that worker's own seed."""

    def __call__(self, worker_id):
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)


def make_loader(dataset, batch_size, seed, num_workers):
    generator = torch.Generator()
    generator.manual_seed(seed)
    sampler = torch.utils.data.RandomSampler(dataset, generator=generator)
    if num_workers == 0:
        dataset.rng = np.random.default_rng(seed)
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler, generator=generator)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, generator=generator,
                      num_workers=num_workers, worker_init_fn=_WorkerReseed())

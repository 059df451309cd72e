# Wrong: seeds a RandomSampler but not the DataLoader, whose workers' base seed then comes from
# the global torch RNG: with workers, the augmentation changes from run to run.
def make_loader(dataset, batch_size, seed, num_workers):
    def reseed(worker_id):
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)

    dataset.rng = np.random.default_rng(seed)
    sampler = torch.utils.data.RandomSampler(dataset, generator=torch.Generator().manual_seed(seed))
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=num_workers,
                      worker_init_fn=reseed if num_workers > 0 else None)

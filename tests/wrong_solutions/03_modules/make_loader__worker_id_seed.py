# Wrong: each worker reseeds from its id alone, so the augmentation does not depend on seed.
def make_loader(dataset, batch_size, seed, num_workers):
    def reseed(worker_id):
        get_worker_info().dataset.rng = np.random.default_rng(worker_id)

    dataset.rng = np.random.default_rng(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      worker_init_fn=reseed, generator=torch.Generator().manual_seed(seed))

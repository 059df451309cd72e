# Wrong: PyTorch's legacy reproducibility recipe reduces the worker seed modulo 2**32 (np.random.seed
# needs 32 bits); the prompt asks for np.random.default_rng(the whole worker seed): another stream.
def make_loader(dataset, batch_size, seed, num_workers):
    # PyTorch's reproducibility recipe: worker_seed = torch.initial_seed() % 2**32
    def seed_worker(worker_id):
        get_worker_info().dataset.rng = np.random.default_rng(torch.initial_seed() % 2**32)

    dataset.rng = np.random.default_rng(seed)
    g = torch.Generator()
    g.manual_seed(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                      worker_init_fn=seed_worker, generator=g)

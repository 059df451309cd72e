def bench_median_ms(fn, *args, device: str = "cpu", warmup: int = 3, repeats: int = 20) -> float:
    """Median latency of ``fn(*args)`` in ms, after ``warmup`` untimed calls; synchronises CUDA."""
    def sync():
        if device == "cuda":
            torch.cuda.synchronize()
    for _ in range(warmup):
        fn(*args)
    samples = np.empty(repeats)
    for i in range(repeats):
        sync()
        t0 = time.perf_counter()
        fn(*args)
        sync()
        samples[i] = time.perf_counter() - t0
    return float(np.median(samples) * 1000)

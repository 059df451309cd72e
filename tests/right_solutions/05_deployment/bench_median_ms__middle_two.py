def bench_median_ms(fn, *args, device: str = "cpu", warmup: int = 3, repeats: int = 20) -> float:
    for _ in range(warmup):
        fn(*args)
    cuda = device == "cuda"
    samples = []
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*args)
        if cuda:
            torch.cuda.synchronize()
        samples.append(1000.0 * (time.perf_counter() - t0))
    samples.sort()
    mid = len(samples) // 2
    return samples[mid] if len(samples) % 2 else (samples[mid - 1] + samples[mid]) / 2

def bench_median_ms(fn, *args, device: str = "cpu", warmup: int = 3, repeats: int = 20) -> float:
    """Wrong: sorted(timings)[n // 2]: the upper middle value, not the median, for an even count."""
    for _ in range(warmup):
        fn(*args)
    timings = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        timings.append((time.perf_counter() - start) * 1e3)
    return sorted(timings)[len(timings) // 2]

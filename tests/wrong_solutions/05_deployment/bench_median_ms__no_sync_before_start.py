def bench_median_ms(fn, *args, device: str = "cpu", warmup: int = 3, repeats: int = 20) -> float:
    """Wrong: on CUDA synchronises only before stopping the clock: queued warm-up work is timed too."""
    for _ in range(warmup):
        fn(*args)
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        timings.append((time.perf_counter() - start) * 1e3)
    return statistics.median(timings)

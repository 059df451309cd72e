import statistics
import time


def bench_median_ms(fn, *args, device="cpu", warmup=3, repeats=20):
    """Wrong: never synchronises, so on CUDA it times kernel launches, not kernels."""
    for _ in range(warmup):
        fn(*args)
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        timings.append((time.perf_counter() - start) * 1e3)
    return statistics.median(timings)

import statistics
import time

import torch


def bench_median_ms(fn, *args, device="cpu", warmup=3, repeats=20):
    """Wrong: returns the mean, which one outlier drags up."""
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
    return statistics.mean(timings)

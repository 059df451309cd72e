import time

import torch


def bench_median_ms(fn, *args, device="cpu", warmup=3, repeats=20):
    """Wrong: times all repeats as one block and divides (a mean in disguise), synchronising once."""
    for _ in range(warmup):
        fn(*args)
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn(*args)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3 / repeats

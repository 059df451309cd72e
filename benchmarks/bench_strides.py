"""How long a stride diagram takes, and how big it gets, as the tensor grows (one run).

Side by side: the numbers a user would otherwise print (``shape``/``stride()``/``storage_offset()``)
cost microseconds; the question is whether ``strides.show`` stays interactive and bounded for big
tensors, thanks to elision. Writes a markdown table to stdout (copied into docs/benchmarks/strides.md).

    python benchmarks/bench_strides.py
"""

from __future__ import annotations

import time

import torch

from labutils import strides


def cases() -> dict[str, torch.Tensor]:
    """Tensors from tiny to huge, including views whose logical size dwarfs their storage."""
    return {
        "3x4 transpose": torch.arange(12.0).reshape(3, 4).t(),
        "2x3x4x5 permute": torch.zeros(2, 3, 4, 5).permute(0, 2, 3, 1),
        "100x100 strided slice": torch.zeros(100, 100)[::3, 5:],
        "2048x2048": torch.zeros(2048, 2048),
        "64x64x64x64 permute": torch.zeros(64, 64, 64, 64).permute(3, 1, 2, 0),
        "expand to 1e5x1e5x3 (3e10 elements)": torch.zeros(3).expand(100_000, 100_000, 3),
        "unfold 1e6 windows (overlapping)": torch.zeros(1_000_010).unfold(0, 10, 1),
    }


def seconds(fn) -> float:
    """CPU time of one call (this process only: less disturbed by other load than wall time)."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    strides.show(torch.zeros(2))._repr_png_()  # warm-up: font cache, first figure
    print("| tensor | elements | `print(t.stride())` | `explain` | `show` -> PNG | boxes drawn | PNG KiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, t in cases().items():
        t_print = seconds(lambda t=t: str((t.shape, t.stride(), t.storage_offset())))
        t_explain = seconds(lambda t=t: strides.explain(t))
        diagram = strides.show(t)
        png: list[bytes] = []
        t_show = seconds(lambda t=t, png=png: png.append(strides.show(t)._repr_png_()))
        print(
            f"| {name} | {t.numel():.3g} | {t_print * 1e6:.0f} µs | {t_explain * 1e3:.1f} ms "
            f"| {t_show * 1e3:.0f} ms | {len(diagram.plan.boxes)} | {len(png[0]) / 1024:.0f} |"
        )


if __name__ == "__main__":
    main()

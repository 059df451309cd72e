"""Benchmark for the grader's rule windows (graders.inside.rules.forbidden): what one costs per profile event.

A window's profile hook sees every call the block makes. Lab 05's parity probe opens one around the
student's export-and-run function, so a ``torch.onnx.export`` (about 4.5 million events) runs under it.
Side by side, in one process, on the same export: no hook, the cheapest hook Python allows (a function
that counts events: the floor of any ``sys.setprofile`` recorder), and the window lab 05 opens.

Run: ``python benchmarks/bench_rules.py [--repeat N]``; prints a Markdown table (CPU seconds of this
process, best of N).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

import onnxruntime
import torch
from torch.export import Dim

from graders.inside.rules import forbidden
from labutils import deploy

ORT_RUNS = {
    "onnxruntime": onnxruntime.InferenceSession.run,
    "onnxruntime (C session)": onnxruntime.capi._pybind_state.InferenceSession.run,
}


def export_and_run(folder: str) -> None:
    """What a lab 05 answer does: export a small MLP with a dynamic batch, run the file in onnxruntime."""
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5)).eval()
    x = torch.randn(4, 16)
    path = os.path.join(folder, f"net{time.monotonic_ns()}.onnx")
    with deploy.quiet_onnx_export():
        torch.onnx.export(net, (x,), path, dynamo=True, verbose=False, dynamic_shapes=({0: Dim("batch")},))
    deploy.ort_run(deploy.ort_session(path), x)


def cpu_seconds(run: Callable[[], None]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def events_of(run: Callable[[], None]) -> int:
    count = [0]

    def hook(frame, event, arg) -> None:
        count[0] += 1

    sys.setprofile(hook)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count[0]


def in_window(run: Callable[[], None]) -> Callable[[], None]:
    def windowed() -> None:
        with forbidden(count=ORT_RUNS) as seen:
            run()
        assert seen.ops, "the window did not see onnxruntime run"

    return windowed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as folder:
        run = lambda: export_and_run(folder)  # noqa: E731
        run()  # the first export in a process imports the exporter
        plain = min(cpu_seconds(run) for _ in range(args.repeat))
        floor = min(cpu_seconds(lambda: events_of(run)) for _ in range(args.repeat))
        window = min(cpu_seconds(in_window(run)) for _ in range(args.repeat))
        events = events_of(run)
    print(
        f"torch {torch.__version__}, {events / 1e6:.2f} M profile events per export, best of {args.repeat}\n"
    )
    print("| run | CPU s | overhead per event |")
    print("|---|---|---|")
    print(f"| no hook | {plain:.2f} | - |")
    print(f"| counting hook (the floor) | {floor:.2f} | {(floor - plain) / events * 1e6:.2f} us |")
    print(f"| `forbidden(count=...)` window | {window:.2f} | {(window - plain) / events * 1e6:.2f} us |")


if __name__ == "__main__":
    main()

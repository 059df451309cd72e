"""Notebook set-up: resolve the DEVICE parameter, seed every generator, mark GPU-only cells."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda")


def resolve_device(device: str = "auto") -> str:
    """Turn a ``DEVICE`` parameter (auto, cpu, cuda) into the device a notebook will use.

    ``auto`` picks CUDA when available. Asking for ``cuda`` on a machine without it raises,
    so a GPU run never silently falls back to the CPU.
    """
    device = device.lower()
    if device not in DEVICE_CHOICES:
        raise ValueError(f"DEVICE must be one of {', '.join(DEVICE_CHOICES)}, got {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("DEVICE='cuda' was requested but torch.cuda.is_available() is False")
    return device


def gpu_count() -> int:
    """CUDA devices this process can use (0 without CUDA)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and torch (all devices) so a notebook run is reproducible."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ.setdefault("PYTHONHASHSEED", str(seed))


def setup(device: str = "auto", seed: int = 0) -> str:
    """The cell right after ``parameters``: resolve the device, seed, and print both.

    Returns the resolved device string (``"cpu"`` or ``"cuda"``).
    """
    resolved = resolve_device(device)
    seed_everything(seed)
    print(f"torch {torch.__version__} | device={resolved} | seed={seed}")
    return resolved


def cuda_only(device: str, what: str) -> bool:
    """Guard for a GPU-only cell: True on CUDA, else prints a visible SKIPPED line and returns False.

    Usage in a cell::

        if cuda_only(DEVICE, "pinned memory + non_blocking copies"):
            ...
    """
    if device == "cuda":
        return True
    print(f"SKIPPED on {device}: {what} needs a CUDA device (run with DEVICE='cuda' on a GPU).")
    return False

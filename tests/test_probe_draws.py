"""A probe's random inputs must tell a plausible mistake from the answer for every salt, not for most: each
`labs grade` and `labs check` run draws them anew, so a mistake that matches by chance in one draw in 200
earns full marks in one grading run in 200 (`labs check` once failed so on lab 05)."""

from __future__ import annotations

import pytest
import torch

from graders.grading import load_lab
from graders.probing import Draw
from tests.conftest import ROOT

LAB_05 = ROOT / "course" / "05_deployment" / "lab_deployment.ipynb"


@pytest.fixture(scope="module")
def onnx_parity_probe():
    return load_lab(LAB_05).probes["test_onnx_parity"]


def test_onnx_parity_inputs_separate_counting_rows_from_averaging_batches(onnx_parity_probe) -> None:
    """A row changes class once exported when its first feature is positive (the probe's ``_ExportSkew``):
    the share of unchanged rows over all inputs must differ from the mean of the batches' shares (what
    ``onnx_parity__mean_of_batch_fractions.py`` returns) in every draw."""
    gaps = []
    for salt in range(100):
        seen: list[list[torch.Tensor]] = []

        def onnx_parity(model, inputs, path, seen=seen):
            seen.append([x.clone() for x in inputs])
            return 0.0, 0.0

        onnx_parity_probe.fn({"onnx_parity": onnx_parity}, Draw(salt, "test_onnx_parity"))
        batches = seen[0]  # the first call gets the probe's batches (the second, one mixed batch)
        agree = [(x[:, 0] <= 0).float() for x in batches]
        overall = float(torch.cat(agree).mean())
        batch_mean = sum(float(a.mean()) for a in agree) / len(agree)
        gaps.append(abs(overall - batch_mean))
    assert min(gaps) >= 0.01, f"salt {gaps.index(min(gaps))}: the two averages differ by only {min(gaps):.3f}"

"""labutils.latency: data, transforms and the rendered figure."""

import pytest

from labutils import deploy, latency


def test_speedups_against_first_row_or_named_baseline():
    plot = latency.from_medians({"eager": 4.0, "compiled": 2.0, "onnx": 8.0})
    assert latency.speedups(plot) == {"eager": 1.0, "compiled": 2.0, "onnx": 0.5}
    plot.baseline = "onnx"
    assert latency.speedups(plot)["eager"] == 2.0


def test_from_table_keeps_rows_and_title():
    table = deploy.LatencyTable(title="batch 8")
    table.add("eager", 3.0)
    table.add("compiled", 1.5)
    plot = latency.from_table(table)
    assert [r.name for r in plot.rows] == ["eager", "compiled"] and plot.title == "batch 8"


def test_summarise_shows_the_tail():
    stats = latency.summarise([1.0] * 9 + [11.0])
    assert stats["median"] == 1.0 and stats["max"] == 11.0 and stats["mean"] == 2.0
    assert stats["mean"] > stats["median"]


def test_rejects_empty_or_nonpositive():
    with pytest.raises(ValueError):
        latency.from_medians({"eager": 0.0})
    with pytest.raises(ValueError):
        latency.from_samples({"eager": []})


def test_figures_have_one_bar_or_row_per_runtime():
    picture = latency.bars({"eager": 1.0, "compiled": 100.0})
    ax = picture.figure.axes[0]
    assert len(ax.patches) == 2 and ax.get_xscale() == "log"
    assert picture._repr_png_().startswith(b"\x89PNG")
    picture = latency.distribution({"a": [1.0, 2.0, 3.0], "b": [2.0, 2.5]})
    assert [t.get_text() for t in picture.figure.axes[0].get_yticklabels()] == ["a", "b"]
    assert picture.plot.rows[1].median_ms == 2.25

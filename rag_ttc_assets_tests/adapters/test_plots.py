import math
import os
import stat

import matplotlib.colors as mcolors
import pytest
from matplotlib.figure import Figure

from rag_ttc_assets.adapters import plots

PNG = b"\x89PNG\r\n\x1a\n"
BRANCHES = ["supported", "not_retrieved", "not_in_context", "unsupported"]


def _sweep_rows():
    return [
        {"arm": "k-16", "top_k": 16, "valid": 1, "recall_10": 0.74, "omitted_chunks": 11},
        {"arm": "k-1", "top_k": 1, "valid": 1, "recall_10": 0.41, "omitted_chunks": 0},
        {"arm": "k-64", "top_k": 64, "valid": 0, "recall_10": None, "omitted_chunks": 40},
        {"arm": "k-4", "top_k": 4, "valid": True, "recall_10": 0.63, "omitted_chunks": 2},
    ]


EXAMPLES = {
    "sweep_curves": lambda p: plots.sweep_curves(p, "top_k", _sweep_rows(), ["valid", "recall_10", "omitted_chunks"],
                                                 "Sweep family: top_k"),
    "delta_histogram": lambda p: plots.delta_histogram(p, [0.0, 0.0, 0.5, -0.25, 1.0, 0.1], "recall_10", "bm25", "hybrid"),
    "failure_flow_bars": lambda p: plots.failure_flow_bars(
        p, {"bm25": dict(zip(BRANCHES, [50, 20, 5, 3])), "hybrid": dict(zip(BRANCHES, [60, 10, 6, 2]))}, BRANCHES),
    "bucket_table_plot": lambda p: plots.bucket_table_plot(
        p, [{"label": "gained", "count": 9, "sum": 9.0}, {"label": "ties", "count": 40, "sum": 0.0},
            {"label": "lost", "count": 6, "sum": -6.0}]),
}

EMPTY = {
    "sweep_curves": lambda p: plots.sweep_curves(p, "top_k", [], ["valid", "recall_10"], "Sweep family: top_k"),
    "sweep_curves_no_series": lambda p: plots.sweep_curves(p, "top_k", _sweep_rows(), [], "Sweep family: top_k"),
    "delta_histogram": lambda p: plots.delta_histogram(p, [], "recall_10", "bm25", "hybrid"),
    "failure_flow_bars": lambda p: plots.failure_flow_bars(p, {}, BRANCHES),
    "failure_flow_bars_all_zero": lambda p: plots.failure_flow_bars(p, {"bm25": {}}, BRANCHES),
    "bucket_table_plot": lambda p: plots.bucket_table_plot(p, []),
}


@pytest.fixture
def drawn(monkeypatch):
    """Every figure the adapter closes, kept so a test can look inside it."""
    figures = []
    real_close = plots.plt.close

    def close(fig=None):
        figures.append(fig)
        real_close(fig)

    monkeypatch.setattr(plots.plt, "close", close)
    return figures


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]


def _assert_one_png(folder, name):
    path = folder / name
    data = path.read_bytes()
    assert data.startswith(PNG)
    assert len(data) > 2000
    assert sorted(os.listdir(folder)) == [name]  # no temp file left behind


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_plot_writes_one_png_and_returns_its_path(tmp_path, name):
    out = tmp_path / "figs" / f"{name}.png"  # the folder does not exist yet
    assert EXAMPLES[name](out) == out
    _assert_one_png(out.parent, out.name)
    assert os.stat(out).st_mode & stat.S_IROTH  # readable, unlike a bare mkstemp file
    assert plots.plt.get_fignums() == []  # the figure was closed


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_empty_input_draws_a_figure_that_says_no_data(tmp_path, drawn, name):
    out = tmp_path / "empty.png"
    EMPTY[name](out)
    _assert_one_png(tmp_path, "empty.png")
    assert "no data" in _texts(drawn[-1])


def test_sweep_sorts_by_the_parameter_and_skips_missing_values(tmp_path, drawn):
    plots.sweep_curves(tmp_path / "s.png", "top_k", _sweep_rows(), ["valid", "recall_10"], "Sweep family: top_k")
    fig = drawn[-1]
    assert fig._suptitle.get_text().startswith("Sweep family: top_k")
    by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}
    assert set(by_title) == {"valid", "recall_10"}

    valid = by_title["valid"]
    assert list(valid.lines[0].get_xdata()) == [1, 4, 16, 64]
    assert list(valid.lines[0].get_ydata()) == [1, 1, 1, 0]
    recall = by_title["recall_10"]
    assert list(recall.lines[0].get_xdata()) == [1, 4, 16]  # k-64 has no recall
    assert list(recall.lines[0].get_ydata()) == [0.41, 0.63, 0.74]
    # point labels follow the points, shown after the prefix all arms share
    assert [t.get_text() for t in recall.texts] == ["1", "4", "16"]
    assert 'shared prefix "k-"' in fig._suptitle.get_text()


def test_sweep_uses_a_log_axis_only_for_a_wide_range(tmp_path, drawn):
    wide = [{"arm": f"a{k}", "k": k, "m": k} for k in (1, 3, 10)]
    narrow = [{"arm": f"a{k}", "k": k, "m": k} for k in (2, 5, 19)]
    plots.sweep_curves(tmp_path / "w.png", "k", wide, ["m"], "wide")
    plots.sweep_curves(tmp_path / "n.png", "k", narrow, ["m"], "narrow")
    assert drawn[0].axes[0].get_xscale() == "log"
    assert drawn[1].axes[0].get_xscale() == "linear"


def test_sweep_series_with_no_values_says_so_while_the_others_draw(tmp_path, drawn):
    rows = [{"arm": "a", "k": 1, "m": 0.5, "gone": None}, {"arm": "b", "k": 2, "m": 0.7}]
    plots.sweep_curves(tmp_path / "s.png", "k", rows, ["m", "gone"], "Sweep family: k")
    by_title = {ax.get_title(): ax for ax in drawn[-1].axes if ax.get_visible()}
    assert len(by_title["m"].lines) == 1
    assert [t.get_text() for t in by_title["gone"].texts] == ["no data"]


def test_delta_histogram_counts_gains_losses_ties_and_marks_zero_and_mean(tmp_path, drawn):
    deltas = [0.0, 0.0, 0.5, -0.25, 1.0, None, math.nan]
    plots.delta_histogram(tmp_path / "d.png", deltas, "recall_10", "bm25", "hybrid")
    ax = drawn[-1].axes[0]
    assert ax.get_title() == "recall_10: hybrid vs bm25, per case"
    (summary,) = [t for t in _texts(drawn[-1]) if t.startswith("n = ")]
    assert "n = 5" in summary and "gains (hybrid > bm25): 2" in summary
    assert "losses: 1" in summary and "ties: 2" in summary and "mean: +0.25" in summary
    assert sorted(line.get_xdata()[0] for line in ax.lines) == [0.0, 0.25]
    # the ties have a bar of their own, centred on 0
    tie_bars = [p for p in ax.patches if p.get_x() < 0 < p.get_x() + p.get_width()]
    assert len(tie_bars) == 1 and tie_bars[0].get_height() == 2


def test_delta_histogram_with_every_case_tied(tmp_path):
    out = plots.delta_histogram(tmp_path / "d.png", [0.0] * 5, "ndcg", "a", "b")
    _assert_one_png(tmp_path, out.name)


def test_failure_flow_stacks_branches_in_order_with_the_first_arm_on_top(tmp_path, drawn):
    flows = {"bm25": {"supported": 50, "not_retrieved": 20, "unsupported": 3},  # no "not_in_context" key
             "hybrid": dict(zip(BRANCHES, [60, 10, 6, 2]))}
    plots.failure_flow_bars(tmp_path / "f.png", flows, BRANCHES)
    ax = drawn[-1].axes[0]
    assert ax.get_title() == "Failure flow: first boundary where support disappeared"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == BRANCHES
    assert [t.get_text() for t in ax.get_yticklabels()] == ["bm25", "hybrid"]
    assert ax.yaxis_inverted()
    bars = ax.patches  # branch by branch, one bar per arm
    assert [(b.get_x(), b.get_width()) for b in bars[0::2]] == [(0, 50), (50, 20), (70, 0), (70, 3)]
    assert [(b.get_x(), b.get_width()) for b in bars[1::2]] == [(0, 60), (60, 10), (70, 6), (76, 2)]
    assert {"50", "20", "60", "10", "6"} <= set(_texts(drawn[-1]))  # wide segments carry their counts
    assert "2" not in _texts(drawn[-1])  # too narrow for a label


def test_bucket_plot_colours_gains_green_and_losses_red_and_shows_the_mean(tmp_path, drawn):
    buckets = [{"label": "gained", "count": 9, "sum": 9.0}, {"label": "ties", "count": 40, "sum": 0.0},
               {"label": "lost", "count": 6, "sum": -6.0}]
    plots.bucket_table_plot(tmp_path / "b.png", buckets)
    ax = drawn[-1].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["gained", "ties", "lost"]
    assert [p.get_height() for p in ax.patches] == [9.0, 0.0, -6.0]
    colours = [mcolors.to_hex(p.get_facecolor()) for p in ax.patches]
    assert colours == [plots.GAIN, plots.NEUTRAL, plots.LOSS]
    assert any("total +3 over 55 cases" in t and "mean = +0.0545" in t for t in _texts(drawn[-1]))


def test_a_failed_save_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    out = tmp_path / "f.png"
    out.write_bytes(b"old")

    def broken(self, *args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        EXAMPLES["bucket_table_plot"](out)
    assert out.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["f.png"]
    assert plots.plt.get_fignums() == []  # closed even on failure


def test_a_second_save_replaces_the_first(tmp_path):
    out = tmp_path / "f.png"
    out.write_bytes(b"old")
    EXAMPLES["delta_histogram"](out)
    _assert_one_png(tmp_path, "f.png")

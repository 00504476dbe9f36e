"""core.ann's query resolution: an arm's own query parameters win; the quantized IVF scans (ivf_sq, ivf_rq) take
the lab's defaults chosen from the recall-latency curve (a third of the partitions probed, re-ranked by exact
distance); every older type keeps LanceDB's per-query defaults, so no existing arm's retrieval rows change."""

import pytest

from rag_ttc_assets.core import ann
from rag_ttc_assets.core.arms import VectorIndexConfig


@pytest.mark.parametrize(("kind", "vectors", "nprobes", "refine"), [
    ("ivf_sq", 1_000_000, 334, 5), ("ivf_rq", 1_000_000, 334, 10), ("ivf_sq", 100_000, 106, 5),
    ("ivf_rq", 9, 1, 10)])
def test_the_quantized_scans_take_the_lab_defaults_against_their_own_partitions(kind, vectors, nprobes, refine):
    vi = VectorIndexConfig(type=kind)
    build = ann.resolve_build(vi, vectors, 384)
    assert ann.resolve_query(vi, build) == {"nprobes": nprobes, "refine_factor": refine}
    assert ann.query_params(vi) == {}  # what the arm itself set: nothing


def test_an_arms_own_query_parameters_win():
    vi = VectorIndexConfig(type="ivf_rq", nprobes=7)
    assert ann.resolve_query(vi, ann.resolve_build(vi, 10_000, 384)) == {"nprobes": 7, "refine_factor": 10}
    vi = VectorIndexConfig(type="ivf_sq", num_partitions=40, refine_factor=2)
    assert ann.resolve_query(vi, ann.resolve_build(vi, 10_000, 384)) == {"nprobes": 14, "refine_factor": 2}


@pytest.mark.parametrize("kind", ["flat", "ivf_flat", "ivf_pq", "ivf_hnsw_sq", "ivf_hnsw_pq"])
def test_the_other_types_keep_lancedbs_per_query_defaults(kind):
    vi = VectorIndexConfig(type=kind)
    assert ann.resolve_query(vi, ann.resolve_build(vi, 10_000, 384)) == {}

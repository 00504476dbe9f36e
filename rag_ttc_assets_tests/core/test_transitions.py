import pytest

from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES
from rag_ttc_assets.core.transitions import ABSENT, flow_index, transitions


def rows(*triples):
    return [{"request_id": r, "query_id": q, "branch": b} for r, q, b in triples]


def test_cells_count_requests_and_list_their_cases():
    a = flow_index(rows(("q1.r1", "q1", "ok"), ("q1.r2", "q1", "ok"), ("q2.r1", "q2", "ok"),
                        ("q3.r1", "q3", "cut_by_evidence_k")))
    b = flow_index(rows(("q1.r1", "q1", "admitted_not_cited"), ("q1.r2", "q1", "ok"),
                        ("q2.r1", "q2", "admitted_not_cited"), ("q3.r1", "q3", "ok")))
    t = transitions(a, b)
    assert t["rows"] == t["columns"] == list(FLOW_BRANCHES)
    cells = {c["key"]: c for c in t["cells"]}
    assert set(cells) == {"ok -> admitted_not_cited", "ok -> ok", "cut_by_evidence_k -> ok"}
    assert cells["ok -> admitted_not_cited"] == {"a": "ok", "b": "admitted_not_cited", "key": "ok -> admitted_not_cited",
                                                "count": 2, "requests": ["q1.r1", "q2.r1"], "cases": ["q1", "q2"]}
    assert cells["ok -> ok"]["cases"] == ["q1"]
    assert t["total"] == 4 and t["changed"] == 3
    # Row order follows the flow: cut_by_evidence_k comes before ok.
    assert [c["key"] for c in t["cells"]] == ["cut_by_evidence_k -> ok", "ok -> admitted_not_cited", "ok -> ok"]


def test_a_request_missing_from_one_arm_is_absent_there():
    t = transitions(flow_index(rows(("q1.r1", "q1", "ok"))), flow_index(rows(("q2.r1", "q2", "ok"))))
    assert t["rows"][-1] == ABSENT and t["columns"][-1] == ABSENT
    assert {(c["a"], c["b"], tuple(c["cases"])) for c in t["cells"]} == {("ok", ABSENT, ("q1",)),
                                                                        (ABSENT, "ok", ("q2",))}
    assert t["total"] == 2


def test_bad_rows_are_refused_naming_the_request():
    with pytest.raises(ValueError, match="q1.r1.*two rows"):
        flow_index(rows(("q1.r1", "q1", "ok"), ("q1.r1", "q1", "ok")))
    with pytest.raises(ValueError, match="q1.r1.*unknown branch 'lost'"):
        transitions(flow_index(rows(("q1.r1", "q1", "lost"))), {})

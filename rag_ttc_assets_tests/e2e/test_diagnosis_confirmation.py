"""The diagnosis of the bundled confirmation arms (baseline, evidence-k-8, prompt-multipart,
prompt-multipart-oracle, as arms.yaml declares them and its `comparisons` pair them) on the bundled corpus and its
pilot questions: it says what those arms support and no more (an effect only where the adjusted p-value allows
it, no recommendation from an offline baseline instrument), and names the oracle arm as an upper bound, never a
recommendation."""

from __future__ import annotations

import json

import pytest
import yaml

from rag_ttc_assets_tests.conftest import PYREF, REPO, write_dataset
from rag_ttc_assets_tests.support.reliability import cli, lab_env

pytestmark = pytest.mark.slow
CONFIRMATION = ("baseline", "evidence-k-8", "prompt-multipart", "prompt-multipart-oracle")


@pytest.fixture(scope="module")
def confirmation(tmp_path_factory):
    root = tmp_path_factory.mktemp("confirmation")
    corpus = json.loads((PYREF / "corpus.json").read_text(encoding="utf-8"))
    evaluation = json.loads((PYREF / "evaluation.json").read_text(encoding="utf-8"))
    pilot = [q for q in evaluation["questions"] if q["id"] in evaluation["pilot"]]
    write_dataset(root / "datasets" / "pyref-pilot", corpus, pilot, [q["id"] for q in pilot])
    bundled = yaml.safe_load((REPO / "arms.yaml").read_text(encoding="utf-8"))
    arms = {a: bundled["arms"][a] for a in CONFIRMATION}
    pairs = [p for p in bundled["comparisons"] if set(p) <= set(CONFIRMATION)]
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": {**bundled["defaults"], "dataset": "pyref-pilot"},
                                                    "arms": arms, "comparisons": pairs}, sort_keys=False))
    env = lab_env(root)
    for args in (("run", *CONFIRMATION), ("compare", "--all")):
        code, _, err = cli(*args, env=env, timeout=1800)
        assert code == 0, err[-4000:]
    code, out, err = cli("diagnose", *CONFIRMATION, "--json", env=env)
    assert code == 0, err[-4000:]
    return json.loads(out), pairs, root


def test_the_confirmation_arms_support_what_they_support_and_no_more(confirmation):
    d, pairs, root = confirmation
    every = [s for sec in d["sections"] for s in sec["sentences"]]
    assert d["pairs"] == pairs and d["baseline"] == "baseline"
    # A claim of an effect is read on the adjusted p-value, at the arms file's alpha.
    for s in every:
        if s["rule"] in ("exec.moves_branch", "exec.strongest_cause", "pair.significant"):
            assert s["p_adjusted"] is not None and s["p_adjusted"] <= d["alpha"], s
    comparisons = {(a, b): json.loads(next(root.glob(f"home/**/comparisons/{a}--{b}.json")).read_text())
                   for a, b in pairs}
    significant = {(a, b, m) for (a, b), rep in comparisons.items() for m, v in rep["metrics"].items()
                   if v["significant"]}
    claimed = {(s["inputs"]["a"], s["inputs"]["b"], s["inputs"]["metric"]) for s in every
               if s["rule"] == "pair.significant"}
    assert claimed == significant
    # The instrument is the offline baseline: nothing is recommended, and every decision says why.
    assert not [s for s in every if s["rule"] == "decision.recommend"]
    decisions = [s for s in every if s["rule"] == "decision.not_decided"]
    assert decisions and all("offline baseline" in s["text"] for s in decisions)
    assert any(s["rule"] == "limit.offline_baseline" for s in every)
    # No family was swept here: no trend is stated.
    assert not [s for s in every if s["rule"] in ("family.trend", "family.admission_mechanism")]


def test_the_oracle_arm_is_named_an_upper_bound_never_a_recommendation(confirmation):
    d, _, _ = confirmation
    every = [s for sec in d["sections"] for s in sec["sentences"]]
    bound = [s for s in every if s["rule"] in ("pair.oracle_bound", "limit.oracle")]
    assert bound and all("prompt-multipart-oracle" in s["text"] and "upper bound" in s["text"] for s in bound)
    for s in every:
        if s["rule"].startswith("decision.") and s["inputs"].get("favoured") == "prompt-multipart-oracle":
            assert "is an oracle" in s["text"] and s["rule"] == "decision.not_decided"
        if s["rule"] == "exec.strongest_cause":
            assert "prompt-multipart-oracle" not in (s["inputs"]["a"], s["inputs"]["b"])
        if s["rule"] == "next.combine":
            assert "oracle" not in s["snippet"]

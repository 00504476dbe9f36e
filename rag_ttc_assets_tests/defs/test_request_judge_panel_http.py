"""A panel of request judges through the Dagster materialization: the lexical judge and a lenient juror on a real
OpenAI-compatible server on 127.0.0.1 (which faults on one question), so the jurors disagree exactly where the
lexical judge says "not addressed"; the flags, Fleiss' kappa and Krippendorff's alpha by hand, the judge-sensitive
count against the two arms' own flows, the jurors side by side in the case report, and compare's drift."""

import json
import re

import pytest
from dagster import DagsterInstance

from rag_ttc_assets.core.arms_file import ArmsError, parse_arms_file
from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, write_mini_lab
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer

JUROR = ('{{model: openai/lenient, api_base: "{base}", api_key_env: RAG_TTC_TEST_KEY, timeout_s: 5, '
         'max_retries: 0}}')
ARMS = MINI_DEFAULTS + """  allow_unpriced_provider: true
arms:
  lexical: {{}}
  panel-all:
    request_judges: [local/lexical, JUROR]
    request_judge_aggregation: all
  panel-any:
    request_judges: [local/lexical, JUROR]
    request_judge_aggregation: any
  offline-panel:
    request_judges: [local/lexical, local/coverage, local/bertscore]
  offline-mean:
    request_judges: [local/lexical, local/coverage, local/bertscore]
    request_judge_aggregation: mean
""".replace("JUROR", JUROR)


def lenient(messages):
    """A juror that calls every request addressed."""
    ids = re.findall(r'<request id="([^"]+)">', messages[-1]["content"])
    return json.dumps({"requests": [{"request": r, "addressed": True, "excerpt": "", "cited_chunk_ids": [],
                                     "verdict": "consistent", "reason": "the lenient juror agrees"} for r in ids]})


def test_a_panel_keeps_every_jurors_verdict_and_measures_their_agreement(tmp_path, monkeypatch):
    from rag_ttc_assets.core.compare_guards import InstrumentDriftError
    from rag_ttc_assets.definitions import build_definitions
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets.stages.arm_comparisons import compare_two, read_pair
    from rag_ttc_assets.stages.inspect import inspect_question, to_markdown
    from rag_ttc_assets.stages.resolve import ArmInputs

    write_mini_lab(tmp_path, monkeypatch, {"mini-03": " FAULT:bad_request"})  # the lenient juror faults there
    instance = DagsterInstance.ephemeral()
    with FakeOpenAIServer(lenient) as server:
        (tmp_path / "arms.yaml").write_text(ARMS.format(base=server.base_url))
        job = build_definitions().resolve_job_def("arm_job")
        for arm in ("lexical", "panel-all", "panel-any", "offline-panel", "offline-mean"):
            assert job.execute_in_process(partition_key=arm, instance=instance, raise_on_error=True).success
    lab = Lab.from_env()
    store = lab.store
    lexical = {r["request_id"]: r for r in store.read_table("lexical", "request_judgments").to_dicts()}
    rows = {a: {r["request_id"]: r for r in store.read_table(a, "request_judgments").to_dicts()}
            for a in ("panel-all", "panel-any")}
    measured = [rid for rid, r in lexical.items() if r["status"] == "judged"]
    assert len(measured) >= 8
    faulted = {rid for rid in measured if rid.startswith("mini-03.")}
    for rid in measured:
        a, y = rows["panel-all"][rid], rows["panel-any"][rid]
        jurors = json.loads(a["jurors"])
        assert [j["model"] for j in jurors] == ["local/lexical", "openai/lenient"]
        assert jurors[0]["addressed"] == lexical[rid]["addressed"]  # each juror's verdict kept as it gave it
        if rid in faulted:  # the lenient juror's fault is its own not-measured, never a vote
            assert jurors[1]["status"] == "judge_bad_request" and a["jurors_measured"] == 1
            assert a["addressed"] == y["addressed"] == lexical[rid]["addressed"] and not a["jurors_disagree"]
        else:
            assert a["addressed"] == lexical[rid]["addressed"] and y["addressed"] is True
            assert a["jurors_disagree"] == (not lexical[rid]["addressed"])
    disagree = [rid for rid in measured if rid not in faulted and not lexical[rid]["addressed"]]
    assert disagree  # the lexical judge leaves some requests unaddressed on this dataset

    s = store.read_arm_json("panel-all", "request_judge_summary.json")
    p = s["panel"]
    assert p["jurors_disagree"] == len(disagree) and p["juror_not_measured"] == {"local/lexical": 0,
                                                                                 "openai/lenient": len(faulted)}
    # Fleiss (2 raters) over the requests both measured: P_i is 1 where they agree, 0 where not; p_yes the share
    # of yes votes.
    both = [rid for rid in measured if rid not in faulted]
    n, d = len(both), len(disagree)
    yes = sum(1 + bool(lexical[r]["addressed"]) for r in both) / (2 * n)
    p_bar, p_e = (n - d) / n, yes ** 2 + (1 - yes) ** 2
    assert p["all_measured"] == n and p["fleiss_kappa"] == pytest.approx((p_bar - p_e) / (1 - p_e))
    # Krippendorff (nominal, 2 coders): alpha = 1 - D (m - 1) / (m_yes m_no), m = 2n values.
    m, m_yes = 2 * n, round(yes * 2 * n)
    assert p["krippendorff_alpha"] == pytest.approx(1 - d * (m - 1) / (m_yes * (m - m_yes)))
    assert store.read_arm_json("panel-all", "judge_summary.json")["request_judge_panel"]["fleiss_kappa"] == \
        p["fleiss_kappa"]

    # Judge-sensitive: with two jurors, `all` is one juror's view and `any` the other's (where both measured), so
    # the requests whose branch depends on the juror are those whose branch differs between the two arms.
    flows = {a: {r["request_id"]: r["branch"] for r in store.read_table(a, "failure_flow").to_dicts()}
             for a in ("panel-all", "panel-any")}
    differ = sorted(r for r in flows["panel-all"] if flows["panel-all"][r] != flows["panel-any"][r])
    sens = store.read_arm_json("panel-all", "failure_flow.json")["judge_sensitive"]
    assert differ and sens["request_ids"] == differ and sens["of"] == len(flows["panel-all"])
    assert sens["line"] == f"judge-sensitive: {len(differ)} of {len(flows['panel-all'])}"
    assert set(differ) <= set(disagree)

    # The case report shows the jurors side by side.
    page = to_markdown(inspect_question(lab.store, ArmInputs(lab, "panel-all").inspected(), disagree[0].split(".")[0]))
    assert "| request | local/lexical | openai/lenient | jurors disagree |" in page
    # Each juror's verdict with its coverage where the juror reports one (the offline lexical judge does; the
    # lenient model juror reports none).
    assert re.search(rf"\| {re.escape(disagree[0])} \| not_addressed \(coverage (\d\.\d\d), calibrated \1\) \| "
                     r"consistent \| True \|", page), page
    # The answer's completeness read two ways, each with its N of M: the lenient juror reports no coverage, so the
    # panel has none (graded: 0 of the judged requests); the share addressed over the judged ones.
    qid = disagree[0].split(".")[0]
    mine = [r for rid, r in rows["panel-all"].items() if rid.startswith(qid + ".") and r["status"] == "judged"]
    share = sum(bool(r["addressed"]) for r in mine) / len(mine)
    n_requests = sum(1 for rid in rows["panel-all"] if rid.startswith(qid + "."))
    assert (f"completeness of this answer: graded - (no coverage reported, 0 of {len(mine)} requests judged); "
            f"share addressed {share:.2f} ({len(mine)} of {n_requests} requests judged)") in page

    # Three offline jurors with different blind spots; the panel is one instrument, named as such.
    off = store.read_arm_json("offline-panel", "request_judge_summary.json")
    # The default aggregation, `all` (chosen by agreement with people on public sets: docs/judges.md).
    assert off["request_judge"]["model"] == "panel[all]: local/lexical, local/coverage, local/bertscore"
    assert off["request_judge"]["offline_baseline"] is True and off["panel"]["all_measured"] == len(measured)
    # The BERTScore juror's verdicts are kept beside the others', each with the soft coverage it thresholds, and the
    # panel's verdict is all three's.
    offline = {r["request_id"]: r for r in store.read_table("offline-panel", "request_judgments").to_dicts()}
    for rid in measured:
        jurors = {j["model"]: j for j in json.loads(offline[rid]["jurors"])}
        assert list(jurors) == ["local/lexical", "local/coverage", "local/bertscore"]
        assert jurors["local/lexical"]["addressed"] == lexical[rid]["addressed"]
        bert = jurors["local/bertscore"]
        assert 0 <= bert["coverage"] <= 1 and bert["addressed"] == (bert["coverage"] >= 0.65 or
                                                                     bert["verdict"] == "contradicts")
        assert "soft-covers" in bert["reason"] and f"{bert['coverage']:.2f}" in bert["reason"]
        assert offline[rid]["addressed"] == all(j["addressed"] for j in jurors.values())
    page = to_markdown(inspect_question(lab.store, ArmInputs(lab, "offline-panel").inspected(),
                                        measured[0].split(".")[0]))
    assert "| request | local/lexical | local/coverage | local/bertscore | jurors disagree |" in page
    mine = [r for rid, r in offline.items() if rid.startswith(measured[0].split(".")[0] + ".")
            and r["status"] == "judged"]
    graded = sum(r["coverage"] for r in mine) / len(mine)
    assert f"completeness of this answer: graded {graded:.2f} (mean coverage, {len(mine)} of {len(mine)} requests " \
           "judged)" in page

    # One calibrated scale (judging.panel.calibrate): each juror's own threshold (0.65 for the BERTScore juror, 0.5 for
    # the word-reading jurors on these gold-labelled requests) at 0.5, piecewise linear, by hand; the raw coverage
    # kept beside it; the panel's coverage the calibrated mean, and `mean` addressed when that mean is >= 0.5.
    def by_hand(j, t):
        c = j["coverage"]
        cal = c * 0.5 / t if c < t else 0.5 + (c - t) * 0.5 / (1 - t)
        return round(max(cal, 0.5) if j["addressed"] else cal, 4)

    mean_rows = {r["request_id"]: r for r in store.read_table("offline-mean", "request_judgments").to_dicts()}
    thresholds = {"local/lexical": 0.5, "local/coverage": 0.5, "local/bertscore": 0.65}
    flipped = 0
    for rid in measured:
        jurors = json.loads(offline[rid]["jurors"])
        cal = [by_hand(j, thresholds[j["model"]]) for j in jurors]
        assert [j["calibrated_coverage"] for j in jurors] == pytest.approx(cal)
        assert all((c >= 0.5) == j["addressed"] for c, j in zip(cal, jurors))
        assert offline[rid]["coverage"] == pytest.approx(round(sum(cal) / 3, 4), abs=1e-4)
        m = mean_rows[rid]
        assert m["coverage"] == offline[rid]["coverage"] and json.loads(m["jurors"]) == jurors
        assert m["addressed"] == (sum(cal) / 3 >= 0.5) and "calibrated mean" in m["reason"]
        flipped += m["addressed"] != offline[rid]["addressed"]
    # The lenient model juror has no threshold: no calibrated coverage, and its panel no coverage.
    for rid in measured:
        if rid not in faulted:
            lenient_row = json.loads(rows["panel-any"][rid]["jurors"])[1]
            assert lenient_row["calibrated_coverage"] is None and rows["panel-any"][rid]["coverage"] is None
    inst = store.read_arm_json("offline-mean", "request_judge_summary.json")["request_judge"]
    assert inst["model"] == "panel[mean]: local/lexical, local/coverage, local/bertscore"
    assert inst["panel_rules"] == "panel-rules/2" and inst["aggregation"] == "mean"
    with pytest.raises(InstrumentDriftError, match="instrument drift"):
        compare_two(read_pair(lab.store, lab.arms, "offline-panel", "offline-mean"))

    # A pair whose panels differ (or a panel against one judge) is instrument drift.
    for a, b in (("panel-all", "panel-any"), ("lexical", "panel-all")):
        with pytest.raises(InstrumentDriftError, match="instrument drift"):
            compare_two(read_pair(lab.store, lab.arms, a, b))


@pytest.mark.parametrize("arm, says", [
    ("request_judges: [local/lexical]", "field 'request_judges': Value error, a panel of one juror"),
    ("request_judges: [local/lexical, local/coverage]\n    request_judge_aggregation: plurality",
     "field 'request_judge_aggregation': Input should be 'majority', 'all', 'any' or 'mean'"),
])
def test_a_bad_panel_names_the_arms_file_the_arm_and_the_field(arm, says):
    text = f"arms:\n  bad:\n    {arm}\n"
    with pytest.raises(ArmsError) as e:
        parse_arms_file(text.encode(), "arms.yaml")
    assert "arms.yaml: arms.bad: " + says in str(e.value)


def test_a_juror_that_measures_nothing_is_said_in_the_run_table_and_judge_agreement(tmp_path, monkeypatch):
    """A juror whose every call faults (a provider nothing listens for on 127.0.0.1) casts no vote, so the panel's
    verdict is the other juror's: the run's panel table says so (all_measured 0 of N, the juror's not_measured),
    and judge-agreement keeps the juror's row, every label not measured, rather than dropping it."""
    import socket

    from rag_ttc_assets.cli.labels import tables
    from rag_ttc_assets.cli.run import run_tables
    from rag_ttc_assets.defs.graph import STAGES
    from rag_ttc_assets.definitions import build_definitions
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets.judging.judge_agreement_stage import agreement, read_agreement_inputs
    from rag_ttc_assets.stages.reports import arm_report

    with socket.socket() as s:  # a free port, closed again: connections to it are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    silent = (f'{{model: openai/silent, api_base: "http://127.0.0.1:{port}/v1", api_key_env: RAG_TTC_TEST_KEY, '
              'timeout_s: 5, max_retries: 0}')
    write_mini_lab(tmp_path, monkeypatch)
    (tmp_path / "arms.yaml").write_text(MINI_DEFAULTS + "  allow_unpriced_provider: true\narms:\n  panel-silent:\n"
                                        f"    request_judges: [local/lexical, {silent}]\n")
    job = build_definitions().resolve_job_def("arm_job")
    assert job.execute_in_process(partition_key="panel-silent", instance=DagsterInstance.ephemeral(),
                                  raise_on_error=True).success
    lab = Lab.from_env()
    rows = lab.store.read_table("panel-silent", "request_judgments").to_dicts()
    judged = [r for r in rows if r["status"] == "judged"]
    assert judged and all(json.loads(r["jurors"])[1]["status"].startswith("judge_") for r in judged)

    report = arm_report(lab.store, "panel-silent", lab.arms["panel-silent"], STAGES["all"])
    printed = run_tables({"panel-silent": report.to_json()}).splitlines()
    [header] = [ln for ln in printed if ln.startswith("arm ") and "juror_not_measured" in ln]
    [line] = [ln for ln in printed if ln.startswith("panel-silent ") and "judge-sensitive" in ln]
    panel = dict(zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", line.strip()), strict=True))
    assert panel["all_measured"] == f"0/{len(judged)}" and panel["juror_not_measured"] == f"openai/silent {len(judged)}"
    assert panel["jurors_disagree"] == f"0/{len(judged)}", panel

    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"kind": "request", "question": r["query_id"], "request": r["request_id"],
                                          "arm": "panel-silent", "addressed": r["addressed"], "annotator": "a1"}) + "\n"
                              for r in judged))
    report = agreement(read_agreement_inputs(lab.store, lab.arms_file, lab.datasets_dir, lab.arms, labels))
    by_rater = {r["rater"]: r for r in report.to_json()["request_labels"]["rows"]}
    assert (by_rater["juror openai/silent"]["n"], by_rater["juror openai/silent"]["not_measured"]) == (0, len(judged))
    assert (by_rater["juror local/lexical"]["n"], by_rater["juror local/lexical"]["kappa"]) == (len(judged), 1.0)
    printed = [row for _, _, table_rows in tables(report) for row in table_rows if row[0] == "juror openai/silent"]
    assert printed and printed[0][-2] == len(judged), printed

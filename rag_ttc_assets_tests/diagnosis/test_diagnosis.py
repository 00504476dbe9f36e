"""The rules engine of the written diagnosis on sweeps built with a planted effect and with none: the planted
effect is claimed, the null is not, the adjusted p-value (not the raw one) decides, a pair or family with too few
paired cases says so, and every number of diagnosis.md is diagnosis.json's."""

from __future__ import annotations

import random
import re

import pytest

from rag_ttc_assets.core import case_comparison, compare_metrics
from rag_ttc_assets.diagnosis import diagnosis as dg
from rag_ttc_assets.diagnosis import diagnosis_decisions, diagnosis_sentences
from rag_ttc_assets.core.compare_records import NotMeasured, PairReport
from rag_ttc_assets.diagnosis.diagnosis_inputs import ArmRecord, DiagnosisInputs
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES
from rag_ttc_assets.core.transitions import transitions

METRICS = {m: compare_metrics.KINDS[m] for m in ("completeness", "valid", "input_tokens", "latency_s")}


def arm(flow: dict[str, int], *, label_use: str = "none", model: str = "openai/gpt-x", judge: str = "openai/judge",
        recall: float = 0.8, coverage: float = 1.0) -> ArmRecord:
    full = {b: flow.get(b, 0) for b in FLOW_BRANCHES}
    cases = {b: [f"q{i:03d}" for i in range(full[b])] for b in FLOW_BRANCHES}
    return ArmRecord(label_use=label_use, generator_model=model, request_judge_model=judge,
                     offline_generator=model.startswith("local/"), offline_judge=judge.startswith("local/"),
                     same_model=model == judge, question_set="all", requests_derived=False, flow=full,
                     flow_total=sum(full.values()), flow_cases=cases,
                     flow_requests={b: [f"{c}.r1" for c in v] for b, v in cases.items()},
                     omitted_by_context=full["omitted_by_context"], valid=50, recall_10=recall,
                     admission_coverage=coverage, requests_measured=60, requests_total=60,
                     requests_supported=full["ok"])


def values(n: int, completeness, valid, tokens=100.0) -> dict:
    return {"completeness": {f"q{i:03d}": completeness(i) for i in range(n)},
            "valid": {f"q{i:03d}": valid(i) for i in range(n)},
            "input_tokens": {f"q{i:03d}": tokens + (i % 3) for i in range(n)},
            "latency_s": {f"q{i:03d}": 0.1 for i in range(n)}}


def report(a: str, b: str, va: dict, vb: dict, branches_a, branches_b, changed: dict) -> PairReport:
    """The pair report of a and b as compare_two makes it, its context the rules read built from the values given
    (the rest of it empty)."""
    core = case_comparison.compare_arms(a, b, va, vb, METRICS, "completeness", n_boot=200, n_perm=2000)
    cases = sorted(va["completeness"])
    none = NotMeasured(a={}, b={})
    return case_comparison.pair_report(
        core, {m: none for m in core.metrics}, {c.case_id: ([], []) for c in core.catastrophic},
        transitions=transitions({f"{c}.r1": (c, branches_a(i)) for i, c in enumerate(cases)},
                                {f"{c}.r1": (c, branches_b(i)) for i, c in enumerate(cases)}),
        per_case={c: {"a": va["completeness"][c], "b": vb["completeness"][c]} for c in cases}, per_case_graded={},
        changed_parameters=changed, not_read={},
        token_latency={"mean_input_tokens": {"a": core.metrics["input_tokens"].mean_a,
                                             "b": core.metrics["input_tokens"].mean_b,
                                             "delta": core.metrics["input_tokens"].mean_delta},
                       "p95_latency_s": {"a": None, "b": None}, "attributed_to": sorted(changed)},
        supply={}, admitted_sets={"identical": 0, "questions": len(cases), "position_only": False},
        headline="completeness", label_drift=False, instruments={}, instrument_drift=[],
        representation_era={"differ": [], "confounded": [], "allowed": False, "line": "", "representations": {}},
        label_use={}, completeness_measured={}, evaluation_digests={})


def sweep(reports: list[PairReport], arms: dict, families: dict | None = None, baseline: str = "base",
          **more) -> DiagnosisInputs:
    return DiagnosisInputs(arms=arms, families=families or {},
                           comparisons=case_comparison.adjust_reports(reports, "holm", 0.05), skipped=[],
                           baseline=baseline, alpha=0.05, p_adjust="holm",
                           pages={f"pair:{r.a}--{r.b}": f"{r.a}--{r.b}.html" for r in reports}, **more)


def with_arms(s: DiagnosisInputs, **update) -> DiagnosisInputs:
    """The sweep with every arm record's fields `update`d."""
    return s.model_copy(update={"arms": {a: r.model_copy(update=update) for a, r in s.arms.items()}})


def planted_and_null() -> DiagnosisInputs:
    n = 60
    rng = random.Random(3)
    # The null arm: within the 40 failing cases, 10 fixed and 10 broken at random places, as chance would.
    flips = rng.sample(range(40), 10) + rng.sample(range(40, n), 10)
    base = values(n, lambda i: 0.0 if i < 40 else 1.0, lambda i: 1.0)
    fixed = values(n, lambda i: 1.0, lambda i: 1.0, tokens=560.0)  # the planted effect, at a cost
    null = values(n, lambda i: (0.0 if i < 40 else 1.0) if i not in flips else (1.0 if i < 40 else 0.0),
                  lambda i: 1.0)
    omitted = lambda i: "omitted_by_context" if i < 40 else "ok"  # noqa: E731
    reports = [
        report("base", "fix", base, fixed, omitted, lambda i: "ok", {"context_runes": [1500, 24000]}),
        report("base", "null", base, null, omitted,
               lambda i: ("ok" if i < 40 else "omitted_by_context") if i in flips else omitted(i),
               {"prompt": ["v1", "v2"]}),
    ]
    arms = {"base": arm({"omitted_by_context": 40, "ok": 20}), "fix": arm({"ok": 60}),
            "null": arm({"omitted_by_context": 40, "ok": 20})}
    return sweep(reports, arms)


def sentences(d: dg.Diagnosis, rule: str | None = None) -> list[dict]:
    """The sentences as diagnosis.json keeps them (`rule`: only that rule's)."""
    return [s.model_dump(exclude_unset=True) for s in d.sentences(rule)]


def test_the_planted_effect_is_claimed_and_the_null_is_not():
    s = planted_and_null()
    d = dg.diagnose(s)
    moves = sentences(d, "exec.moves_branch")
    assert [(m["inputs"]["a"], m["inputs"]["b"]) for m in moves] == [("base", "fix")]
    assert moves[0]["p_adjusted"] <= 0.05 and "omitted_by_context goes from 40 to 0" in moves[0]["text"]
    strongest = sentences(d, "exec.strongest_cause")
    assert len(strongest) == 1 and strongest[0]["inputs"]["b"] == "fix"
    assert "context_runes 1500 -> 24000" in strongest[0]["text"]
    null = [x for x in sentences(d, "pair.no_significant_difference") if x["inputs"]["b"] == "null"]
    assert null and "completeness" in null[0]["inputs"]["metrics"]
    assert not [x for x in sentences(d, "pair.significant") if x["inputs"]["b"] == "null"]
    # The planted effect's cases are the requests that moved out of omitted_by_context.
    assert moves[0]["cases"] == [f"q{i:03d}" for i in range(40)]
    # The cost is a cost: its rise is stated as a loss and as the price of the gain.
    trade = sentences(d, "pair.trade_off")
    assert trade and "input tokens a question" in trade[0]["text"] and trade[0]["numbers"]["input_tokens"] > 0
    tokens = [x for x in sentences(d, "pair.significant") if x["inputs"]["metric"] == "input_tokens"]
    assert tokens and "a loss (a cost" in tokens[0]["text"]


def test_with_no_effect_anywhere_no_cause_is_demonstrated():
    n = 40
    base = values(n, lambda i: float(i % 2), lambda i: 1.0)
    # 10 cases up and 10 down: no effect.
    same = values(n, lambda i: 1.0 - float(i % 2) if i % 4 in (0, 1) else float(i % 2), lambda i: 1.0)
    flow = lambda i: "ok" if i % 2 else "not_addressed"  # noqa: E731
    flow_b = lambda i: ("not_addressed" if i % 2 else "ok") if i % 4 in (0, 1) else flow(i)  # noqa: E731
    s = sweep([report("base", "b", base, same, flow, flow_b, {"evidence_k": [5, 8]})],
              {"base": arm({"ok": 20, "not_addressed": 20}), "b": arm({"ok": 20, "not_addressed": 20})})
    d = dg.diagnose(s)
    assert not sentences(d, "exec.moves_branch") and not sentences(d, "exec.strongest_cause")
    assert sentences(d, "exec.no_demonstrated_cause")
    decision = sentences(d, "decision.not_decided")
    assert decision and decision[0]["text"].startswith("evidence_k: not decided: no significant difference")


def test_the_adjusted_p_decides_not_the_raw_one():
    # 6 discordant pairs all one way: McNemar exact p = 2/64 = 0.031 raw, above 0.05 once adjusted over the sweep.
    n = 30
    base = values(n, lambda i: 0.5, lambda i: 0.0 if i < 6 else 1.0)
    better = values(n, lambda i: 0.5, lambda i: 1.0)
    s = sweep([report("base", "b", base, better, lambda i: "ok", lambda i: "ok", {"prompt": ["v1", "v2"]})],
              {"base": arm({"ok": 30}), "b": arm({"ok": 30})})
    valid = s.comparisons[0].metrics["valid"]
    assert valid.p_value is not None and valid.p_adjusted is not None
    assert valid.p_value < 0.05 < valid.p_adjusted, valid
    d = dg.diagnose(s)
    assert not sentences(d, "pair.significant") and not sentences(d, "exec.moves_branch")
    flat = sentences(d, "pair.no_significant_difference")[0]
    assert "valid" in flat["inputs"]["metrics"] and flat["numbers"]["valid.p_adjusted"] == valid.p_adjusted


def test_a_family_with_too_few_paired_cases_says_so():
    n = 6
    a = values(n, lambda i: 0.0, lambda i: 0.0)
    b = values(n, lambda i: 1.0, lambda i: 1.0)
    rep = report("c-1500", "c-6000", a, b, lambda i: "omitted_by_context", lambda i: "ok",
                 {"context_runes": [1500, 6000]})
    fam = {"context": {"parameter": "context_runes", "members": ["c-1500", "c-6000"], "missing": [],
                       "value_of": {"c-1500": 1500, "c-6000": 6000}}}
    s = sweep([rep], {"c-1500": arm({"omitted_by_context": 6}, coverage=0.2),
                      "c-6000": arm({"ok": 6}, coverage=1.0)}, fam, baseline="c-1500")
    d = dg.diagnose(s)
    assert sentences(d, "pair.too_few_cases") and sentences(d, "family.too_few_cases")
    assert not sentences(d, "pair.significant") and not sentences(d, "exec.strongest_cause")
    assert "too few paired cases" in sentences(d, "decision.not_decided")[0]["text"]
    # The admission mechanism is still read from the family's records (descriptive, not a tested effect).
    mech = sentences(d, "family.admission_mechanism")
    assert mech and "from 6000 on, no request is lost there" in mech[0]["text"]
    assert sentences(d, "family.retrieval_vs_admission")


def test_an_oracle_arm_is_an_upper_bound_never_a_recommendation():
    n = 60
    base = values(n, lambda i: 0.0 if i < 40 else 1.0, lambda i: 1.0)
    oracle = values(n, lambda i: 1.0, lambda i: 1.0)
    rep = report("base", "orc", base, oracle, lambda i: "not_addressed" if i < 40 else "ok", lambda i: "ok",
                 {"requests_in_prompt": ["none", "oracle"], "prompt": ["v1", "v1-oracle"]})
    d = dg.diagnose(sweep([rep], {"base": arm({"not_addressed": 40, "ok": 20}),
                                  "orc": arm({"ok": 60}, label_use="oracle")}))
    assert not sentences(d, "exec.strongest_cause") and not sentences(d, "decision.recommend")
    decision = sentences(d, "decision.not_decided")[0]
    assert "is an oracle" in decision["text"] and decision["inputs"]["favoured"] == "orc"
    assert sentences(d, "pair.oracle_bound") and "upper bound" in sentences(d, "exec.moves_branch")[0]["text"]
    assert sentences(d, "limit.oracle")


def test_a_clean_significant_gain_with_independent_instruments_is_recommended():
    d = dg.diagnose(planted_and_null())
    rec = sentences(d, "decision.recommend")
    assert [r["inputs"]["value"] for r in rec] == [24000]


def test_an_offline_baseline_instrument_decides_nothing():
    s = planted_and_null()
    s = with_arms(s, generator_model="local/extractive", request_judge_model="local/lexical", offline_generator=True,
                  offline_judge=True)
    d = dg.diagnose(s)
    assert not sentences(d, "decision.recommend")
    assert any("offline baseline" in x["text"] for x in sentences(d, "decision.not_decided"))
    [limit] = sentences(d, "limit.offline_baseline")
    assert "an offline answerer's latency is the lab process's own compute" in limit["text"]
    # Judged offline, answered by a model: the answers' latency is the provider's, and the sentence says nothing of it.
    s = with_arms(s, generator_model="openai/gpt-4o-mini", offline_generator=False)
    [limit] = sentences(dg.diagnose(s), "limit.offline_baseline")
    assert "local/lexical" in limit["text"] and "latency" not in limit["text"]


def _md_lines(md: str) -> dict[str, str]:
    out = {}
    for line in md.splitlines():
        m = re.match(r"^- (.*) \(rule `[a-z_.]+`, (s\d+)\)$", line) or re.match(r"^\| (.*) \| `[a-z_.]+` \|$", line)
        if m:
            sid = m.group(2) if m.re.groups == 2 else None
            out[sid or f"row:{m.group(1)}"] = m.group(1)
    return out


def _plain(md_text: str) -> tuple[str, list[str]]:
    links = re.findall(r"\[((?:\\.|[^\]\\])*)\]\([^)]*\)", md_text)
    text = re.sub(r"\[((?:\\.|[^\]\\])*)\]\([^)]*\)", r"\1", md_text)
    unescape = lambda t: re.sub(r"\\(.)", r"\1", t)  # noqa: E731
    return unescape(text), [unescape(x) for x in links]


def test_every_number_in_the_markdown_is_the_json_number():
    d = dg.diagnose(planted_and_null())
    md = dg.to_markdown(d)
    lines = _md_lines(md)
    every = sentences(d)
    rows = {k: v for k, v in lines.items() if k.startswith("row:")}
    for s in every:
        # Each shown number is the JSON's number formatted by its kind, and the text is made of them.
        for name, value in s["numbers"].items():
            assert s["shown"][name] == diagnosis_sentences.shown(s["kinds"][name], value)
        if s["id"] in lines:
            text, linked = _plain(lines[s["id"]])
        else:  # a decision row
            match = [v for v in rows.values() if _plain(v)[0] == s["text"]]
            assert match, s["text"]
            text, linked = _plain(match[0])
        assert text == s["text"]
        assert all(x in s["shown"].values() for x in linked), (linked, s["shown"])
        numbers_in_text = re.findall(r"(?<![\w.-])[+-]?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w-])", text)
        allowed = set(s["shown"].values()) | {str(v) for v in _flat(s["inputs"])}
        assert all(x in allowed or x.lstrip("+") in allowed for x in numbers_in_text), (numbers_in_text, s)
    assert len([s for s in every if s["id"] in lines]) + len(rows) == len(every)


def _flat(x):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _flat(k)
            yield from _flat(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _flat(v)
    else:
        yield x
        if isinstance(x, str):
            yield from re.findall(r"\d+", x)


@pytest.mark.parametrize("name", ["<img src=x onerror=alert(1)>", "[a](javascript:x)", "a|b*c_d`e"])
def test_markdown_escapes_text_from_the_records(name):
    s = diagnosis_sentences.Sentence("t").t(f"case {name} ").n("x", 1, "count")
    d = dg.Diagnosis.model_validate({"baseline": "b", "arms": [], "families": [], "pairs": [], "p_adjust": None,
                                     "alpha": 0.05, "min_paired": 10, "human_labels": None,
                                     "sections": [{"id": "summary", "title": "T", "sentences": [s.done("s1")]}]})
    md = dg.to_markdown(d)
    line = next(x for x in md.splitlines() if x.startswith("- "))
    assert not re.search(r"(?<!\\)[<\[\]|`*_]", line[2:line.rindex(" (rule")]), line
    assert _plain(line[2:line.rindex(" (rule")])[0] == f"case {name} 1"


def test_next_experiment_combines_more_evidence_with_the_prompt_as_a_pasteable_arm():
    import yaml

    from rag_ttc_assets.core.arms import ArmConfig
    from rag_ttc_assets_tests.conftest import REPO

    n = 20
    same = values(n, lambda i: 0.5, lambda i: 1.0)
    cut = lambda i: "cut_by_evidence_k" if i < 3 else "ok"  # noqa: E731
    k8 = report("base", "k8", same, same, cut, lambda i: "not_addressed" if i < 3 else "ok",
                {"context_runes": [12000, 40000], "evidence_k": [5, 8]})
    prompt = report("base", "multi", same, same, lambda i: "ok", lambda i: "ok",
                    {"prompt": ["grounded-answer-v1", "grounded-answer-multipart-v2"]})
    s = sweep([k8, prompt], {"base": arm({"cut_by_evidence_k": 3, "ok": 17}), "k8": arm({"ok": 20}),
                             "multi": arm({"ok": 20})})
    d = dg.diagnose(s)
    combine = sentences(d, "next.combine")
    assert len(combine) == 1 and combine[0]["numbers"] == {"cell.cut_by_evidence_k -> not_addressed": 3}
    snippet = yaml.safe_load(combine[0]["snippet"])
    (name, override), = snippet["arms"].items()
    assert override == {"context_runes": 40000, "evidence_k": 8, "prompt": "grounded-answer-multipart-v2"}
    assert [name] == [p[1] for p in snippet["comparisons"]][:1] and ["base", name] in snippet["comparisons"]
    defaults = yaml.safe_load((REPO / "arms.yaml").read_text())["defaults"]
    assert ArmConfig.model_validate({**defaults, **override}).evidence_k == 8
    # Once an arm of the arms file runs the combination, it is no longer proposed.
    s = s.model_copy(update={"all_configs": {"both": {**override, "dataset": "pyref"}}})
    assert not sentences(dg.diagnose(s), "next.combine")


def _correction(judge, corrected):
    from rag_ttc_assets.diagnosis.diagnosis_inputs import HumanCorrection, Interval

    return HumanCorrection(a="base", b="wide", judge="request judge J", labels=24, labelled={"base": 6, "wide": 6},
                           rows={"base": 40, "wide": 40}, weighting="uniform", estimator=None,
                           judge_difference=Interval(mean=judge[0], low=judge[1], high=judge[2]) if judge else None,
                           corrected=Interval(mean=corrected[0], low=corrected[1], high=corrected[2])
                           if corrected else None)


@pytest.mark.parametrize("judge, corrected, outcome, more, shown", [
    # the judge alone finds wide more complete (b - a excludes 0 above)
    ((0.20, 0.10, 0.30), (0.05, -0.10, 0.20), "removed", "wide", ("+0.200", "+0.050 [-0.100, +0.200]")),
    ((0.20, 0.10, 0.30), (-0.30, -0.45, -0.15), "reversed", "wide", ("+0.200", "-0.300 [-0.450, -0.150]")),
    ((0.20, 0.10, 0.30), (0.25, 0.05, 0.45), "holds", "wide", ("+0.200", "+0.250 [+0.050, +0.450]")),
    # the judge alone finds base more complete: every difference read toward base (a - b)
    ((-0.20, -0.30, -0.10), (0.30, 0.15, 0.45), "reversed", "base", ("+0.200", "-0.300 [-0.450, -0.150]")),
    ((0.05, -0.05, 0.15), (0.50, 0.20, 0.80), "drawn", None, ("+0.050", "+0.500 [+0.200, +0.800]")),
    ((0.05, -0.05, 0.15), (0.10, -0.20, 0.40), "none", None, ("+0.050", "+0.100 [-0.200, +0.400]")),
])
def test_the_correction_says_whether_the_judges_conclusion_is_removed_reversed_or_holds(judge, corrected, outcome,
                                                                                        more, shown):
    s = diagnosis_decisions.limitations(sweep([], {}, human_corrections=[_correction(judge, corrected)]))[0]
    d = s.done("s1")
    assert d["rule"] == "limit.human_correction" and d["inputs"]["outcome"] == outcome
    assert diagnosis_decisions.OUTCOME_TEXT[outcome] in d["text"]
    x, y = (more, {"wide": "base", "base": "wide"}[more]) if more else ("wide", "base")
    if more:
        assert f"finds {x} more complete than {y} ({x} minus {y}: {shown[0]}" in d["text"]
    else:
        assert f"finds no difference in completeness between {x} and {y} ({x} minus {y}: {shown[0]}" in d["text"]
    assert (f"corrected by 24 human labels (6 rows of base and 6 of wide labelled) {x} minus {y} is {shown[1]}"
            in d["text"])


def test_without_labels_or_with_too_few_the_diagnosis_says_so_or_nothing():
    assert not [s for s in diagnosis_decisions.limitations(sweep([], {})) if s.rule == "limit.human_correction"]
    s = diagnosis_decisions.limitations(sweep([], {}, human_corrections=[_correction((0.2, 0.1, 0.3), None)]))[0]
    assert s.done("s1")["inputs"]["outcome"] == "not_estimable" and "not estimable" in s.done("s1")["text"]

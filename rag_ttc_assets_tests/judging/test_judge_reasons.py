"""Every offline judge's reason states the rule that decided its verdict, each number beside its threshold compared as
the verdict compared it: a property over many generated requests and answers (a fixed seed, so CI sees the same cases).

Judges: the lexical request judge (`local/lexical`), the whole-answer coverage juror (`local/coverage`), the BERTScore
juror (`local/bertscore`, with constructed word vectors) and the statement judge (support of an answer's statements by
evidence, and their check against gold quotes), with a bag-of-words `embed` (no model download)."""

from __future__ import annotations

import random
import re

import pytest

from rag_ttc_assets.judging.juror_records import KeptJuror
from rag_ttc_assets.judging.lexical_judge import (COSINE_THRESHOLD, GOLD_SAME_CLAIM_COSINE, GOLD_SAME_CLAIM_RECALL,
                                                  RECALL_THRESHOLD, compared, shown, verify_against_gold,
                                                  verify_statements)
from rag_ttc_assets.judging.request_judge import (ADDRESS_RECALL, REQUEST_TERM_RECALL, SOFT_ADDRESS_RECALL, Judged,
                                                  LabelledRequest, judge_requests, judge_requests_soft,
                                                  judge_requests_whole)
from rag_ttc_assets_tests.judging.test_request_judge import bag_of_words, word_vectors

WORDS = ["cache", "server", "token", "memory", "thread", "queue", "lock", "socket", "buffer", "index", "file",
         "stores", "returns", "releases", "blocks", "flushes", "writes", "reads", "sales", "revenue", "rose",
         "increased", "fell"]
NUMBERS = ["2", "3", "10", "2023"]
CASES = 300

# "A op B": a number compared with a threshold, as every reason writes it.
COMPARISON = re.compile(r"(\d+\.\d+) (>=|<) (\d+\.\d+)")
COVERS = re.compile(r"covers (\d+\.\d+) of .*?\((>=|<) (\d+\.\d+)")
BEST = re.compile(r"\(best (\d+\.\d+) (>=|<) (\d+\.\d+)\)")
SAME_CLAIM = re.compile(r"the same claim: cosine (\d+\.\d+) (>=|<) (\d+\.\d+), content-word recall (\d+\.\d+) (>=|<) "
                        r"(\d+\.\d+)")


def _holds(x: str, op: str, t: str) -> bool:
    return float(x) >= float(t) if op == ">=" else float(x) < float(t)


def _sentence(rng: random.Random) -> str:
    words = rng.sample(WORDS, rng.randint(2, 6))
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words) + 1), rng.choice(NUMBERS))
    return " ".join(words).capitalize() + "."


def _mutated(rng: random.Random, sentence: str) -> str:
    """A gold sentence copied into an answer: as is, negated, its number changed, a word dropped or added."""
    words = sentence.rstrip(".").split()
    kind = rng.randrange(5)
    if kind == 1:
        words.insert(rng.randint(1, len(words)), "not")
    elif kind == 2:
        nums = [i for i, w in enumerate(words) if w in NUMBERS]
        if nums:
            words[nums[0]] = rng.choice([n for n in NUMBERS if n != words[nums[0]]])
        else:
            words.append(rng.choice(NUMBERS))
    elif kind == 3 and len(words) > 2:
        words.pop(rng.randrange(len(words)))
    elif kind == 4:
        words.insert(rng.randrange(len(words) + 1), rng.choice(WORDS))
    return " ".join(words) + "."


def _case(seed: int) -> tuple[list[LabelledRequest], str]:
    rng = random.Random(seed)
    requests = []
    for k in range(rng.randint(1, 4)):
        gold = tuple(" ".join(_sentence(rng) for _ in range(rng.randint(1, 2))) for _ in range(rng.randint(0, 2)))
        answer_only = rng.random() < 0.3 and gold
        requests.append(LabelledRequest(f"r{k}", _sentence(rng), () if answer_only else gold,
                                        gold[0] if answer_only else None))
    golds = [s for r in requests for g in r.gold for s in g.split(". ") if s]
    answer = []
    for _ in range(rng.randint(0, 5)):
        answer.append(_mutated(rng, rng.choice(golds).rstrip(".") + ".") if golds and rng.random() < 0.6
                      else _sentence(rng))
    return requests, " ".join(answer)


def _check_request_reason(j: Judged | KeptJuror, threshold: float, judge: str) -> None:
    """A request judgment's reason agrees with its verdict: an offline judge's reply (Judged), or a panel juror's row as
    stored (KeptJuror)."""
    reason, verdict = j.reason or "", j.verdict
    where = f"{judge}: {verdict}: {reason!r}"
    for x, op, t in COMPARISON.findall(reason):
        assert _holds(x, op, t), where
    assert "below" not in reason, where  # comparisons are written "x < t", and only where x is below t
    # The first coverage the reason names is the judgment's own.
    first = BEST.search(reason) if verdict == "not_addressed" else None
    first = first or re.search(r"covers (\d+\.\d+)", reason)
    assert abs(float(first.group(1)) - j.coverage) <= 0.0051, where
    if verdict != "contradicts":  # decided by the coverage against the threshold: that comparison, written
        coverage = COVERS.search(reason) or BEST.search(reason)
        assert coverage, where
        x, op, t = coverage.groups()
        assert float(t) == threshold and _holds(x, op, t), where
    if verdict == "not_addressed":
        assert not j.addressed and op == "<" and "contradicts" not in reason, where
    elif verdict == "contradicts":
        # Decided by the contradiction rule, whatever the coverage: the same claim, both numbers reaching theirs.
        same = SAME_CLAIM.search(reason)
        assert j.addressed and same and "contradicts gold" in reason, where
        c, cop, ct, r, rop, rt = same.groups()
        assert (cop, float(ct), rop, float(rt)) == (">=", GOLD_SAME_CLAIM_COSINE, ">=", GOLD_SAME_CLAIM_RECALL), where
    else:  # consistent, not_verifiable: addressed by the coverage, and nothing in the reason reads below a threshold
        assert j.addressed and op == ">=" and " < " not in reason, where
        assert ("consistent: " in reason) == (verdict == "consistent"), where
        assert ("nothing to verify it against" in reason) == (verdict == "not_verifiable"), where


@pytest.mark.parametrize("block", range(6))
def test_every_request_judges_reason_states_the_comparison_that_decided_its_verdict(block: int) -> None:
    seen: dict[tuple[str, str], int] = {}
    for seed in range(block * CASES // 6, (block + 1) * CASES // 6):
        requests, answer = _case(seed)
        for judge, out in (("local/lexical", judge_requests(requests, answer, ["c1"], [], bag_of_words)),
                           ("local/coverage", judge_requests_whole(requests, answer, ["c1"], bag_of_words)),
                           ("local/bertscore",
                            judge_requests_soft(requests, answer, ["c1"], [], bag_of_words, word_vectors))):
            for r, j in zip(requests, out, strict=True):
                threshold = (SOFT_ADDRESS_RECALL if judge == "local/bertscore" else
                             ADDRESS_RECALL if r.gold else REQUEST_TERM_RECALL)
                _check_request_reason(j, threshold, judge)
                seen[(judge, j.verdict)] = seen.get((judge, j.verdict), 0) + 1
    # The generated cases reach every verdict of every judge (so the property is checked on each).
    for judge in ("local/lexical", "local/coverage", "local/bertscore"):
        for verdict in ("consistent", "not_addressed", "not_verifiable", "contradicts"):
            if block == 0 or verdict != "contradicts":
                assert seen.get((judge, verdict), 0) >= 1, (judge, verdict, seen)


def test_every_statement_judges_reason_states_the_comparison_that_decided_its_verdict() -> None:
    counts = {"supported": 0, "unsupported": 0, "clash": 0, "contradicts": 0}
    for seed in range(CASES):
        requests, answer = _case(seed)
        statements = [s + "." for s in answer.split(". ") if s.strip(".")]
        evidence = [g for r in requests for g in r.gold]
        for label, out in (("evidence", verify_statements(statements, evidence, bag_of_words)[0]),
                           ("gold", verify_against_gold(statements, evidence, bag_of_words))):
            for v in out:
                reason, where = v["reason"], f"{v!r}"
                assert "below" not in reason, where
                for x, op, t in COMPARISON.findall(reason):
                    assert _holds(x, op, t), where
                if not evidence:
                    assert reason.startswith("no ") and not v["supported"], where
                    continue
                if v.get("contradicts_gold"):
                    counts["contradicts"] += 1
                    same = SAME_CLAIM.search(reason)
                    assert same and not v["supported"], where
                    assert (same.group(2), same.group(5)) == (">=", ">="), where
                    continue
                rec = re.search(r"content-word recall (\d+\.\d+) (>=|<) (\d+\.\d+), cosine (\d+\.\d+) (>=|<) "
                                r"(\d+\.\d+)", reason)
                assert rec, where
                assert (float(rec.group(3)), float(rec.group(6))) == (RECALL_THRESHOLD, COSINE_THRESHOLD), where
                both = rec.group(2) == rec.group(5) == ">="
                if v["supported"]:  # both reached, no clash
                    counts["supported"] += 1
                    assert both and ", but " not in reason, where
                elif ", but " in reason:  # both reached, but the sentence differs in negation, number or name
                    counts["clash"] += 1
                    assert both, where
                else:  # no sentence reaches both: the nearest one's numbers, one at least below its threshold
                    counts["unsupported"] += 1
                    assert not both and reason.startswith(f"no {label} sentence (or adjacent pair) reaches both"), where
    assert all(counts.values()), counts


def test_a_number_is_printed_on_the_side_of_the_threshold_it_lies() -> None:
    assert compared(0.4999, 0.5) == "0.4999 < 0.50" and compared(0.5, 0.5) == "0.50 >= 0.50"
    assert compared(0.654, 0.65) == "0.65 >= 0.65" and compared(0.6496, 0.65) == "0.6496 < 0.65"
    assert shown(0.431, 0.6) == "0.43" and compared(0.73, 0.6) == "0.73 >= 0.60"

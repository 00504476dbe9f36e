"""A sweep survives a failing arm: `rag-ttc run A B C` whose middle arm fails inside a step runs A and C, names
B's failed step and error, records them in B's run record, exits 1; the rerun of B reuses its finished answers.
`rag-ttc sweep FAMILY --local` likewise runs every member after a failing one."""

import json
import re

import yaml

from rag_ttc_assets_tests.conftest import mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer
from rag_ttc_assets_tests.support.reliability import arms_text, cli, cli_error, fake_model, lab_env, remote_model

PARTIAL = "results/generated-answers.partial.jsonl"


def test_a_failing_arm_does_not_stop_the_others_and_its_rerun_reuses_its_answers(tmp_path):
    corpus = mini_corpus()
    questions = mini_questions(corpus)
    write_dataset(tmp_path / "datasets" / "mini", corpus, questions)
    env, n = lab_env(tmp_path), len(questions)
    with FakeOpenAIServer(fake_model) as server:
        # The middle arm's generator is priced (its answers are made), its judge is not, and the arm does not
        # allow unpriced models: its judge step raises before any verdict.
        middle = {"generator": remote_model(server.base_url, model="openai/gpt-4o-mini"),
                  "judge": remote_model(server.base_url), "allow_unpriced_provider": False}
        arms = {"first": {}, "middle": middle, "last": {"evidence_k": 1}}
        lab = {"judge_remote": True, "retrieval": "bm25"}  # every judge at the server: no offline judge to load
        (tmp_path / "arms.yaml").write_text(arms_text("mini", arms, server.base_url, **lab))
        code, out, err = cli("run", "first", "middle", "last", "--stage", "judge", env=env, timeout=300)
        assert code == 1, err[-3000:]
        assert re.search(r"^first: ran \d+ asset\(s\)", out, re.M), out
        assert re.search(r"^middle: FAILED at step judge_verdicts in run ", out, re.M), out
        assert re.search(r"^last: ran \d+ asset\(s\)", out, re.M), out
        for arm in ("first", "last"):  # the arms on either side finished their stage
            assert (tmp_path / "home" / "store" / "arms" / arm / "judge_verdicts.parquet").is_file()
        assert "Traceback" not in err
        error = cli_error(err)
        assert re.match(r"arm 'middle': run [0-9a-f-]+ failed:\n  step judge_verdicts: .*UnpricedModelError: "
                        r"model 'openai/fake-model' \(judge\) has no known price", error), error
        last = error.splitlines()[-1]  # the arms not finished, at the end
        assert last.startswith("1 of 3 arms not finished (the others finished): middle (step judge_verdicts);"), last
        assert "`rag-ttc run middle --stage judge`" in last

        code, out, err = cli("runs", "middle", "--json", env=env)
        assert code == 0, err[-3000:]
        (record,) = json.loads(out)
        assert record["status"] == "failed" and record["failed_step"] == "judge_verdicts", record
        assert record["exception"] == "UnpricedModelError" and "has no known price" in record["error"]
        assert record["partial_rows"][PARTIAL] == n  # the answers it finished before the judge failed
        status = json.loads((tmp_path / record["run_dir"] / "status.json").read_text())
        assert {"answers", "contract_results", "contract_summary"} <= set(status["steps_succeeded"])
        code, out, err = cli("runs", "middle", env=env)
        assert code == 0 and re.search(r"^middle +failed .* judge_verdicts ", out, re.M), out

        # The rerun, the judge now allowed: the finished answers are served from the provider cache.
        middle["allow_unpriced_provider"] = True
        (tmp_path / "arms.yaml").write_text(arms_text("mini", arms, server.base_url, **lab))
        before = server.request_count
        code, out, err = cli("run", "middle", "--stage", "judge", "--json", env=env, timeout=300)
        assert code == 0, err[-3000:]
        rerun = json.loads(out)["arms"]["middle"]
        answers = rerun["calls"]["answers"]
        assert answers["provider_calls"] == 0 and answers["cache_hits"] == n, answers
        assert not [r for r in server.requests[before:] if r["body"]["model"] == "gpt-4o-mini"]
        assert rerun["judge"]["judged"] == n  # its judge ran this time (its verdicts: cache hits of the same texts)

        # A sweep family in this process whose first member fails as `middle` did: the second still runs.
        spec = yaml.safe_load(arms_text("mini", arms, server.base_url, **lab))
        spec["families"] = {"pricing": {"parameter": "allow_unpriced_provider", "values": [False, True],
                                        "names": ["unpriced", "priced"],
                                        "fixed": {k: v for k, v in middle.items() if k != "allow_unpriced_provider"}}}
        (tmp_path / "arms.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        code, out, err = cli("sweep", "pricing", "--local", "--stage", "judge", "--json", env=env, timeout=300)
        assert code == 1, err[-3000:]
        swept = json.loads(out)["arms"]
        assert (swept["unpriced"]["status"], swept["priced"]["status"]) == ("FAILURE", "SUCCESS"), swept
        assert re.search(r"^\[1/2\] unpriced -> FAILURE at step judge_verdicts in run ", err, re.M), err[-3000:]
        assert re.search(r"^\[2/2\] priced -> SUCCESS: ran \d+ asset\(s\)", err, re.M), err[-3000:]
        assert "Traceback" not in err
        assert cli_error(err).splitlines()[-1].startswith(
            "1 of 2 arms not finished (the others finished): unpriced (step judge_verdicts);")

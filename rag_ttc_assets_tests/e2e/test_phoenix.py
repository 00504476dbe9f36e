"""Imported arms read from a real Phoenix server (support/phoenix_server.py: `phoenix serve` on 127.0.0.1, one per
test session). The traced test application (support/traced_app.py) exports every span both to the server over
OTLP/HTTP and to an OTLP JSON file; `rag-ttc run` on one arm importing the file and one importing the server's
project gives the same retrieval rows, admitted contexts and answers, and the diagnosis is logged back to Phoenix
as span annotations that read back equal to the flow rows."""

from __future__ import annotations

import json
import time

import polars as pl
import pytest
import yaml

from rag_ttc_assets_tests.conftest import mini_corpus, mini_questions, write_mini_lab
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.e2e.test_imported import DEFAULTS, app_config
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer
from rag_ttc_assets_tests.support.phoenix_server import MISSING, phoenix_missing
from rag_ttc_assets_tests.support.reliability import fake_model
from rag_ttc_assets_tests.support.required import needs
from rag_ttc_assets_tests.support.traced_app import run_app

pytestmark = needs(phoenix_missing() and MISSING)

ARMS = ("from-file", "from-phoenix")


def wait_for_spans(base_url: str, project: str, count: int, timeout_s: float = 60.0) -> list[dict]:
    """Phoenix ingests OTLP exports through a queue: wait until the project holds every exported span."""
    from rag_ttc_assets.adapters.phoenix import client as phoenix_client

    client = phoenix_client(base_url, "test")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            spans = client.spans.get_spans(project_identifier=project, limit=10**6)
        except Exception:  # the project appears with its first span
            spans = []
        if len(spans) >= count or time.monotonic() > deadline:
            assert len(spans) == count, f"Phoenix holds {len(spans)} of the {count} exported spans"
            return spans
        time.sleep(0.5)


@pytest.fixture
def phoenix_lab(tmp_path, monkeypatch, phoenix_server):
    """A mini lab; the traced app's spans in Phoenix project `traced-<test>` and in traces/app.json; arms importing
    each."""
    root = write_mini_lab(tmp_path, monkeypatch)
    corpus = mini_corpus()
    questions = mini_questions(corpus)
    project = f"traced-{tmp_path.name}"
    with FakeOpenAIServer(fake_model) as srv:
        exporter = run_app(corpus, questions, app_config(srv.base_url), tmp_path / "app",
                           phoenix=(phoenix_server.otlp_http_endpoint, project))
    (root / "traces").mkdir()
    exporter.write(root / "traces" / "app.json")
    wait_for_spans(phoenix_server.base_url, project, len(exporter.spans))
    source = {"answer_format": "contract"}
    arms = {"from-file": {"supply": "imported", "source": {"file": "traces/app.json", "format": "otlp_json", **source}},
            "from-phoenix": {"supply": "imported", "source": {"format": "phoenix", "endpoint": phoenix_server.base_url,
                                                               "project": project, **source}}}
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": DEFAULTS, "arms": arms,
                                                    "comparisons": [list(ARMS)]}, sort_keys=False))
    return root, project, exporter, questions


def test_importing_from_phoenix_gives_the_rows_the_trace_file_gives(phoenix_lab):
    from rag_ttc_assets.lab import Lab

    root, project, exporter, questions = phoenix_lab
    code, out, err = rag_ttc("run", *ARMS, env={"DAGSTER_HOME": str(root / "dh")})
    assert code == 0, err
    assert "FAILED" not in out + err
    store = Lab.from_env().store

    mappings = {a: store.read_arm_json(a, "import_mapping.json") for a in ARMS}
    m = mappings["from-phoenix"]
    assert (m["endpoint"], m["project"], m["source_file"], m["spans"]) == (
        Lab.from_env().arms["from-phoenix"].source.endpoint, project, None, len(exporter.spans))
    assert m["source_digest"].startswith("sha256:") and m["source_digest"] != mappings["from-file"]["source_digest"]
    assert m["matched_traces"] == len(questions) and m["unanswered_questions"] == 0
    for k in ("matched_traces", "matched_by_attribute", "documents", "documents_by_id", "external_documents"):
        assert m[k] == mappings["from-file"][k], k

    for name in ("retrieval_rows", "admitted_contexts", "imported_chunks", "contract_results"):
        file_t, server_t = (store.read_table(a, name).sort("query_id" if name != "imported_chunks" else "chunk_id")
                            for a in ARMS)
        assert server_t.equals(file_t), name
    file_a, server_a = (store.read_table(a, "answers").sort("query_id") for a in ARMS)
    # prompt_digest is each source's digest; Phoenix keeps span times to the microsecond, the file to the nanosecond.
    same = [c for c in file_a.columns if c not in ("prompt_digest", "latency_s")]
    assert server_a.select(same).equals(file_a.select(same))
    assert (server_a["latency_s"] - file_a["latency_s"]).abs().max() < 2e-6
    assert set(server_a["prompt_digest"].to_list()) == {m["source_digest"]}
    file_f, server_f = (store.read_table(a, "failure_flow").sort("request_id") for a in ARMS)
    assert server_f.equals(file_f)

    # The diagnosis went back to Phoenix: one annotation per request on its trace's root span, read back from the
    # server equal to the flow rows and the request judge's verdicts. The file arm annotates nothing.
    from rag_ttc_assets.adapters.phoenix import read_annotations

    logged = store.read_arm_json("from-phoenix", "phoenix_annotations.json")
    assert (logged["annotations"], logged["logged"], logged["not_annotated"]) == (server_f.height, server_f.height, 0)
    assert not store.arm_path("from-file", "phoenix_annotations.json").exists()
    roots = {format(s.context.trace_id, "032x"): format(s.context.span_id, "016x")
             for s in exporter.spans if s.parent is None}  # the app's own root spans, as it exported them
    trace_of = {r["query_id"]: r["trace_id"] for r in store.read_table("from-phoenix", "answers").to_dicts()}
    back = read_annotations(m["endpoint"], project, sorted(roots.values()), ["rag-ttc"])
    judged = {r["request_id"]: r for r in store.read_table("from-phoenix", "request_judgments").to_dicts()}
    assert sorted((a["span_id"], a["identifier"], a["result"]["label"], a["result"]["score"],
                   a["result"]["explanation"], a["metadata"]["verdict"]) for a in back) == sorted(
        (roots[trace_of[f["query_id"]]], f"from-phoenix/{f['request_id']}", f["branch"],
         1.0 if f["supported"] else 0.0, judged[f["request_id"]]["reason"], judged[f["request_id"]]["verdict"])
        for f in server_f.to_dicts())
    assert {a["annotator_kind"] for a in back} == {"CODE"}

    # The run record copies what was read from the server, as it copies a source file.
    copies = list((root / "home" / "runs" / "from-phoenix").rglob("inputs/imported-source-phoenix-spans.json"))
    assert len(copies) == 1, f"no copy of the Phoenix spans in a run record under {root / 'home' / 'runs'}"
    assert len(json.loads(copies[0].read_text(encoding="utf-8"))) == len(exporter.spans)


def test_an_unreachable_server_or_an_unknown_project_stops_the_arm_naming_them_with_nothing_written(
        phoenix_server, tmp_path, monkeypatch):
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets_tests.support.s3_server import free_port

    root = write_mini_lab(tmp_path, monkeypatch)
    closed = f"http://127.0.0.1:{free_port()}"
    arms = {"no-server": {"supply": "imported", "source": {"format": "phoenix", "endpoint": closed,
                                                            "project": "app"}},
            "no-project": {"supply": "imported", "source": {"format": "phoenix", "endpoint": phoenix_server.base_url,
                                                             "project": "no-such-project"}}}
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": DEFAULTS, "arms": arms}))
    code, _, err = rag_ttc("run", "no-server", env={"DAGSTER_HOME": str(root / "dh")})
    assert code != 0
    assert f"Phoenix project 'app' at {closed}" in err and f"the Phoenix server at {closed} (field " \
           "'source.endpoint') is unreachable" in err, err[-3000:]
    code, _, err = rag_ttc("run", "no-project", env={"DAGSTER_HOME": str(root / "dh")})
    assert code != 0
    assert f"the Phoenix server at {phoenix_server.base_url} has no project 'no-such-project'" in err, err[-3000:]
    store = Lab.from_env().store
    for arm in arms:
        for name in ("imported_rows", "imported_chunks", "retrieval_rows", "answers"):
            assert not store.table_path(arm, name).exists(), (arm, name)

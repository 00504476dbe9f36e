"""Contextual representations on the user's path: `rag-ttc run` builds them with the offline baseline builder and
reports retrieval beside the titled baseline's, `rag-ttc inspect` shows the generator was sent chunk text only, and
`rag-ttc compare` states a representation change and refuses an era change that came with a chunking change."""

import json

import polars as pl

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc

ARMS = MINI_DEFAULTS + """arms:
  baseline: {}
  contextual: {representation: contextual}
  contextual-rebuilt-500: {representation: contextual, representation_era: rebuilt-2026, chunk_runes: 500,
                           overlap_runes: 50}
"""


def _contexts(home, chunk_runes):
    """context -> chunk id of the offline builder's rows at `chunk_runes`, read from the store's artifacts."""
    cache = home / "store" / "cache"
    manifests = {kind: [json.loads((d / "manifest.json").read_text()) | {"dir": d} for d in (cache / kind).iterdir()]
                 for kind in ("chunks", "representations")}
    chunks = {m["content_digest"] for m in manifests["chunks"] if m["key"]["fields"]["chunk_runes"] == chunk_runes}
    out = {}
    for manifest in manifests["representations"]:
        d = manifest["dir"]
        if manifest["key"]["fields"]["representation"] == "contextual" and manifest["key"]["inputs"]["chunks"] in chunks:
            df = pl.read_parquet(d / "representations.parquet")
            out.update(zip(df["context"].to_list(), df["chunk_id"].to_list()))
    return out


def test_contextual_representations_run_compare_and_stay_out_of_the_prompt(tmp_path):
    corpus = mini_corpus()
    questions = mini_questions(corpus)
    write_dataset(tmp_path / "datasets" / "mini", corpus, questions)
    (tmp_path / "arms.yaml").write_text(ARMS)
    env = {"RAG_TTC_ARMS": str(tmp_path / "arms.yaml"), "RAG_TTC_DATASETS": str(tmp_path / "datasets"),
           "RAG_TTC_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("run", "contextual", "baseline", "contextual-rebuilt-500", "--json", env=env)
    assert code == 0, err
    reports = json.loads(out)["arms"]
    rep = reports["contextual"]["representations"]
    assert rep["builder"] == "contextual/1" and rep["builder_model"] == "local/contextual"
    assert rep["offline_baseline"] is True and rep["era"] == "local/contextual" and rep["not_built"] == 0
    assert rep["statuses"] == {"built": rep["representations"]} and rep["provider_calls"] == rep["representations"]
    assert reports["baseline"]["representations"]["era"] == "titled/1"
    assert reports["contextual-rebuilt-500"]["representations"]["era"] == "rebuilt-2026"
    # Another era, another artifact: the rebuilt arm's representations were not served from the first one's.
    assert reports["contextual-rebuilt-500"]["representations"]["cache_hits"] == 0
    assert reports["contextual"]["retrieval"]["evaluated"] == reports["baseline"]["retrieval"]["evaluated"] == 7

    # The tables as a user reads them: retrieval beside baseline's, who built the representations, a baseline named.
    code, text, err = rag_ttc("run", "contextual", "baseline", env=env)
    assert code == 0, err
    lines = text.splitlines()
    assert any(ln.startswith("contextual ") and str(reports["contextual"]["retrieval"]["recip_rank"])[:5] in ln
               for ln in lines)
    assert any(ln.startswith("contextual ") and "contextual/1 by local/contextual (offline baseline" in ln
               for ln in lines)
    assert "local/contextual is an offline baseline representation builder" in text

    # The generator was sent the chunk text, never a representation's context.
    contexts = _contexts(tmp_path / "home", 600)
    assert contexts
    for q in questions:
        code, out, err = rag_ttc("inspect", "contextual", q["id"], "--json", env=env)
        assert code == 0, err
        sent = "\n".join(m.get("content") or "" for s in json.loads(out)["answer"]["messages_sent"]
                         for m in s["messages"])
        assert "<chunk id=" in sent or not q["answerable"]
        assert not [c for c in contexts if c in sent], q["id"]

    # A representation change alone is stated; with a chunking change as well it is refused unless allowed.
    code, out, err = rag_ttc("compare", "baseline", "contextual", env=env)
    assert code == 0, err
    assert ("representations differ (builder, builder_model, prompt_digest, era): baseline titled/1 (era titled/1), "
            "contextual contextual/1 by local/contextual (offline baseline;") in out
    code, out, err = rag_ttc("compare", "contextual", "contextual-rebuilt-500", env=env)
    assert code == 1 and out == ""
    assert "REPRESENTATION ERA CHANGED (era differ" in err and "together with chunk_runes, overlap_runes" in err
    assert "not attributable to chunking alone" in err and "--allow-era-change" in err
    code, out, err = rag_ttc("compare", "contextual", "contextual-rebuilt-500", "--allow-era-change", env=env)
    assert code == 0, err
    assert "REPRESENTATION ERA CHANGED (era differ" in out and "(--allow-era-change)" in out
    code, out, err = rag_ttc("compare", "contextual", "contextual-rebuilt-500", "--allow-era-change", "--json",
                             env=env)
    era = json.loads(out)["representation_era"]
    assert era["allowed"] is True and era["differ"] == ["era"] and era["confounded"] == ["chunk_runes",
                                                                                         "overlap_runes"]

"""Reliability 5: a truncated shared artifact is caught by its digest on the next `rag-ttc run` and rebuilt,
with a warning, and the run succeeds with the same results."""

import json

import polars as pl

from rag_ttc_assets_tests.support.reliability import arms_text, cli, lab_env


def test_truncated_chunks_are_detected_and_rebuilt_on_the_next_run(rel_lab):
    env = lab_env(rel_lab)
    (rel_lab / "arms.yaml").write_text(arms_text("rel", {"base": {}}))
    code, out, err = cli("run", "base", "--stage", "retrieval", "--json", env=env)
    assert code == 0, err[-3000:]
    first = json.loads(out)["arms"]["base"]
    rows = pl.read_parquet(rel_lab / "home/store/arms/base/retrieval_rows.parquet")

    (chunk_dir,) = (rel_lab / "home/store/cache/chunks").iterdir()
    target = chunk_dir / "chunks.parquet"
    good = target.read_bytes()
    target.write_bytes(good[: len(good) // 2])  # a truncated write, a full disk, a bad copy

    code, out, err = cli("run", "base", "--stage", "retrieval", "--json", env=env)
    assert code == 0, err[-3000:]
    again = json.loads(out)["arms"]["base"]
    assert f"artifact {chunk_dir} is corrupt (content digest does not match the files); rebuilding it" in err
    assert again["ran"][0] == "chunks"  # not "up to date": the damaged artifact made chunks stale
    assert target.read_bytes() == good  # rebuilt, byte for byte
    assert again["retrieval"] == first["retrieval"]
    assert pl.read_parquet(rel_lab / "home/store/arms/base/retrieval_rows.parquet").equals(rows)
    code, out, err = cli("run", "base", "--stage", "retrieval", env=env)
    assert code == 0 and "base: up to date, nothing to run" in out and "corrupt" not in err

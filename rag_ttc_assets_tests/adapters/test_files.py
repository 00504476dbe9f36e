"""One parse per step: the arms file, the datasets and the prompts are read, hashed and parsed once per process for
the same bytes, however many Labs the lab resource, the fingerprint wrapper and the asset body build; an edit is
read afresh."""

import os
import time

from dagster import AssetKey, DagsterInstance

from rag_ttc_assets.adapters import input_files
from rag_ttc_assets import lab as lab_module
from rag_ttc_assets.lab import PROJECT_ROOT, Lab

OLD = time.time() - 3600  # files older than the racy window: their digests are trusted to their stat


def _age(root) -> None:
    for folder, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(folder, name), (OLD, OLD))


def _counting(monkeypatch) -> dict[str, list[str]]:
    """Every read-and-hash of a file, and every parse of an arms file, dataset or prompt, by path."""
    seen: dict[str, list[str]] = {"read": [], "arms": [], "dataset": [], "prompt": []}
    # The argument naming the file: parse_arms_file(data, path), parse_dataset(name, corpus, ...),
    # parse_prompt(name, text, kind, path).
    for name, kind, at in (("parse_arms_file", "arms", 1), ("parse_dataset", "dataset", 1),
                           ("parse_prompt", "prompt", 3)):
        real = getattr(input_files, name)

        def parse(*args, _real=real, _kind=kind, _at=at, **kwargs):
            seen[_kind].append(str(args[_at]))
            return _real(*args, **kwargs)

        monkeypatch.setattr(input_files, name, parse)
    real_read = input_files._bytes_digest

    def read(path):
        seen["read"].append(str(path))
        return real_read(path)

    monkeypatch.setattr(input_files, "_bytes_digest", read)
    for cache in (input_files._ARMS, input_files._DATASETS, input_files._PROMPTS, input_files._DIGESTS, lab_module._CHECKED_ARMS):
        cache.clear()  # a cold process
    return seen


def test_a_step_reads_hashes_and_parses_each_input_once(mini_lab, monkeypatch):
    """The lab resource's Labs and the fingerprint wrapper's share one parse of each file; two materializations of
    the same step in this process parse nothing the second time."""
    from rag_ttc_assets.definitions import JOB, build_definitions

    _age(mini_lab.arms_file.parent)
    seen = _counting(monkeypatch)
    job = build_definitions(mini_lab).resolve_job_def(JOB)
    with DagsterInstance.ephemeral() as instance:
        for _ in range(2):
            assert job.execute_in_process(partition_key="baseline", instance=instance,
                                          asset_selection=[AssetKey("corpus_binding")]).success
    reads = [p for p in seen["read"] if not p.startswith(str(mini_lab.home))]
    assert sorted(reads) == sorted(set(reads)), f"a file read and hashed twice: {sorted(reads)}"
    assert len(seen["arms"]) == 1 and seen["arms"][0] == str(mini_lab.arms_file)
    assert len(seen["dataset"]) == 1
    assert sorted(seen["prompt"]) == sorted(set(seen["prompt"])) and seen["prompt"]
    assert any(p.endswith("corpus.json") for p in reads) and any(p.endswith("evaluation.json") for p in reads)


def test_labs_share_one_parse_and_an_edit_is_read_afresh(mini_lab, monkeypatch):
    _age(mini_lab.arms_file.parent)
    seen = _counting(monkeypatch)
    fingerprints = set()
    for _ in range(3):
        lab = Lab.from_env()
        cfg = lab.arms["baseline"]
        fingerprints.add(tuple(sorted(lab.fingerprint_inputs(cfg).items())))
        lab.prompt(cfg.prompt, "answer")
    assert len(fingerprints) == 1
    assert len(seen["arms"]) == 1
    first_reads = list(seen["read"])
    assert sorted(first_reads) == sorted(set(first_reads))
    # An edit of the arms file (a new arm) and of the dataset's evaluation: both read and parsed again.
    text = mini_lab.arms_file.read_text(encoding="utf-8")
    mini_lab.arms_file.write_text(text.replace("  baseline: {}", "  baseline: {}\n  wide: {evidence_k: 9}"),
                                  encoding="utf-8")
    evaluation = mini_lab.datasets_dir / "mini" / "evaluation.json"
    evaluation.write_text(evaluation.read_text(encoding="utf-8").replace('"pilot"', '"pilot" '), encoding="utf-8")
    lab = Lab.from_env()
    assert "wide" in lab.arms.arms
    assert len(seen["arms"]) == 2
    assert lab.fingerprint_inputs(lab.arms["baseline"]) != dict(next(iter(fingerprints)))


def test_a_recently_written_file_is_never_trusted_to_its_stat(tmp_path):
    """Two writes of the same size within one timestamp tick keep size, mtime and inode: a file modified in the
    last two seconds is hashed again on every ask."""
    path = tmp_path / "p.txt"
    path.write_text("aaaa")
    first = input_files.file_digest(path)
    stat = path.stat()
    path.write_text("bbbb")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same signature as the first write
    assert input_files.file_digest(path) != first
    assert input_files.file_digest(tmp_path / "missing.txt") is None
    assert input_files.file_digest(PROJECT_ROOT / "arms.yaml") == input_files.file_digest(PROJECT_ROOT / "arms.yaml")

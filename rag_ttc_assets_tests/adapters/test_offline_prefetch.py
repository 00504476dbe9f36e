"""The offline baselines encode a stage's texts in one batched pass (adapters.offline_prefetch, Caller.prefetch):
through `rag-ttc run` on the mini lab, every text reaches the model once, the answers and judging steps each send
their texts in one encode call instead of one per question, a stage the provider cache serves encodes nothing, and
the dry pass foresees exactly the texts a real call embeds."""

import json

import numpy as np

from rag_ttc_assets import cli
from rag_ttc_assets.adapters import embeddings, offline_prefetch, torch_embeddings
from rag_ttc_assets.adapters.local_providers import ExtractiveAnswerer, LexicalJudge
from rag_ttc_assets.judging.judge_inputs import VerifyStatements


def _recording(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real = torch_embeddings.encode

    def encode(texts, *args, **kwargs):
        calls.append(list(texts))
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(torch_embeddings, "encode", encode)
    monkeypatch.setattr(embeddings, "_memo", type(embeddings._memo)())
    return calls


def test_each_stage_sends_its_texts_once_in_one_call_and_a_cached_stage_none(mini_lab, monkeypatch, capsys):
    assert cli.main(["run", "baseline", "--stage", "retrieval"]) == 0
    calls = _recording(monkeypatch)
    assert cli.main(["run", "baseline", "--stage", "answers"]) == 0
    questions = len(json.loads((mini_lab.dataset_dir("mini") / "evaluation.json").read_text())["questions"])
    assert questions > 3
    assert len(calls) == 1 and len(calls[0]) == len(set(calls[0])) > questions  # one pass, no text twice
    answered = set(calls[0])
    calls.clear()
    assert cli.main(["run", "baseline", "--stage", "judge"]) == 0
    sent = [t for c in calls for t in c]
    assert 1 <= len(calls) <= 2  # the statement judge's pass, and the request judge's when it embeds anything
    assert len(sent) == len(set(sent)) and not set(sent) & answered  # in this process, nothing encoded twice
    # A rerun the provider cache serves (every reply cached) encodes nothing at all.
    calls.clear()
    monkeypatch.setattr(embeddings, "_memo", type(embeddings._memo)())
    assert cli.main(["run", "baseline", "--stage", "judge", "--force"]) == 0
    assert calls == []
    capsys.readouterr()


def _forget_replies(lab) -> None:
    """Delete every cached provider reply, keeping the vector cache."""
    import shutil

    for folder in lab.provider_cache_root.iterdir():
        if folder.name != "vectors":
            shutil.rmtree(folder)


def test_a_new_process_reads_the_encodings_an_earlier_one_wrote(mini_lab, monkeypatch, capsys):
    """A Dagster UI materialization or a second `rag-ttc run` is a new process: its memo is empty. With the provider
    cache's replies gone too (a changed prompt would do the same), its answers step encodes nothing the first
    process encoded: it reads those vectors from the store's vector cache, and its answers are the first run's."""
    import shutil

    from rag_ttc_assets.adapters.store import Table

    assert cli.main(["run", "baseline", "--stage", "retrieval"]) == 0
    calls = _recording(monkeypatch)
    assert cli.main(["run", "baseline", "--stage", "answers"]) == 0
    assert len(calls) == 1 and calls[0]
    first = mini_lab.store.read_table("baseline", Table.ANSWERS)
    _forget_replies(mini_lab)  # every reply must be made again
    monkeypatch.setattr(embeddings, "_memo", type(embeddings._memo)())  # a new process remembers nothing
    calls.clear()
    assert cli.main(["run", "baseline", "--stage", "answers", "--force"]) == 0
    assert calls == []
    again = mini_lab.store.read_table("baseline", Table.ANSWERS)
    assert again[Table.ANSWERS.c.raw_text].to_list() == first[Table.ANSWERS.c.raw_text].to_list()
    # Without the store's vectors, the same rerun encodes them again: the vector cache is what served them.
    shutil.rmtree(mini_lab.provider_cache_root / "vectors")
    _forget_replies(mini_lab)
    monkeypatch.setattr(embeddings, "_memo", type(embeddings._memo)())
    assert cli.main(["run", "baseline", "--stage", "answers", "--force"]) == 0
    assert len(calls) == 1 and sorted(calls[0]) == sorted(set(calls[0]))
    capsys.readouterr()


def test_the_dry_pass_foresees_exactly_what_a_real_call_embeds():
    seen: list[str] = []

    def embed(texts):
        seen.extend(texts)
        rng = np.random.default_rng(len(seen))
        v = rng.standard_normal((len(texts), 16))
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    prompt = ("<question>How do I open a file, and how do I close it?</question>\n<evidence>\n"
              "<chunk id=\"c1\">Use open(path) to open a file for reading. The mode argument picks text or bytes."
              "</chunk>\n<chunk id=\"c2\">Call close() on the file object when done. A with block closes it for "
              "you.</chunk>\n</evidence>")
    messages = [{"role": "user", "content": prompt}]
    ExtractiveAnswerer(embed).reply(prompt)
    texts, words = offline_prefetch.recorded_texts("local/extractive", [(messages, None)])
    assert texts == list(dict.fromkeys(seen)) and texts and words == []
    seen.clear()
    case = VerifyStatements.of("How do I close a file?", ["Call close() on the file object."],
                               ["Call close() on the file object when done.", "A with block closes it."])
    LexicalJudge(embed).reply_to(case)
    texts, _ = offline_prefetch.recorded_texts("local/lexical", [(messages, case)])
    assert texts == list(dict.fromkeys(seen)) and texts

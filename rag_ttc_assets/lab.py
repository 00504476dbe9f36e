"""Where the lab's inputs and outputs live: arms file, datasets folder, prompts, artifact store.

Resolved the same way for the CLI, `dagster dev` and tests: explicit argument, then the
`RAG_TTC_*` environment variables, then the project folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from rag_ttc_assets.adapters import embeddings
from rag_ttc_assets.adapters.input_files import file_digest, known_digest, load_arms, load_prompt
from rag_ttc_assets.adapters.learned_juror import parameters_path, uses_learned_juror
from rag_ttc_assets.adapters.object_store import (ObjectArtifactStore, SCHEMES, is_object_uri, local_cache_dir,
                                                  remote_root)
from rag_ttc_assets.adapters.provider_cache import remote_filesystem
from rag_ttc_assets.adapters.store import ArtifactStore
from rag_ttc_assets.core.arms_file import Arms, ArmsError
from rag_ttc_assets.core.run_records import RunFolders
from rag_ttc_assets.core.prompts import GENERATION_KINDS, LABEL_PLACEHOLDER, ORACLE, Prompt, PromptError
from rag_ttc_assets.core.representations import MODEL_BUILT

PROMPT_FIELDS = {"prompt": "answer", "judge_statements_prompt": "judge_statements",
                 "judge_verdicts_prompt": "judge_verdicts", "judge_gold_prompt": "judge_gold",
                 "judge_requests_prompt": "judge_requests"}


def prompt_fields(cfg) -> dict[str, str]:
    """The prompt fields an arm uses and each one's kind: a tool arm's answer prompt has no evidence (the model
    looks it up), the citation check's retry prompt is used only when the check is on, and the representation
    prompt only when a model builds the representations."""
    fields = dict(PROMPT_FIELDS)
    if cfg.supply == "tool":
        fields["prompt"] = "tool_answer"
    if cfg.citation_check:
        fields["citation_retry_prompt"] = "answer"
    if cfg.representation in MODEL_BUILT:
        fields["representation_prompt"] = "representation"
    if cfg.entailment_jurors:  # a request judge or juror of kind entailment (judging.entailment)
        fields["judge_entailment_prompt"] = "judge_entailment"
    return fields

PROJECT_ROOT = Path(__file__).resolve().parent.parent


LABELS_INPUT = "labels"  # the fingerprint input of the labels' files (fingerprint_inputs)


def _file_digest(path: Path) -> str:
    return file_digest(path) or "missing"


class LabPathError(ValueError):
    """A lab location the lab cannot use (a URI other than the store's `s3://`)."""


def _path(explicit: str | Path | None, env: str, default: Path) -> Path:
    value = explicit or os.environ.get(env) or default
    if isinstance(value, str) and "://" in value:
        # Path() would turn "s3://bucket/x" into a local folder "s3:/bucket/x" without a word.
        where = "argument" if explicit else env
        raise LabPathError(f"{where}: {value!r} is a URI; the lab's datasets, prompts and arms file must be local "
                           "(or network-mounted) files; only RAG_TTC_HOME may be an s3:// URI (docs/cluster.md)")
    return Path(value).expanduser().resolve()


def _home(explicit: str | Path | None, default: Path):
    """The store's home: a local folder, or an `s3://<bucket>/<prefix>` URI (adapters/object_store.py)."""
    value = explicit or os.environ.get("RAG_TTC_HOME")
    if isinstance(value, str) and is_object_uri(value):
        try:
            import fsspec

            fsspec.get_filesystem_class(value.split("://", 1)[0])  # s3fs installed?
        except (ImportError, ValueError) as e:
            where = "argument" if explicit else "RAG_TTC_HOME"
            raise LabPathError(f"{where}: {value!r} needs the object-store packages ({e}); install them with "
                               "pip install -e '.[cluster]'") from None
        return remote_root(value)
    if isinstance(value, str) and "://" in value:
        where = "argument" if explicit else "RAG_TTC_HOME"
        raise LabPathError(f"{where}: {value!r}: the store supports {', '.join(s + '://' for s in SCHEMES)} URIs "
                           "(docs/cluster.md) and local folders; use one of those")
    return _path(explicit, "RAG_TTC_HOME", default)


def _cache_location(explicit: str | Path | None, env: str = "RAG_TTC_PROVIDER_CACHE") -> str | Path | None:
    """The provider cache's root when set: a local folder, or an fsspec URI whose filesystem is installed."""
    value = explicit or os.environ.get(env)
    if not value:
        return None
    if isinstance(value, str) and "://" in value:
        where = "argument" if explicit else env
        try:
            fs, local = remote_filesystem(value)
        except ValueError as e:
            raise LabPathError(f"{where}: {e}; install that protocol's fsspec package (s3fs, gcsfs, adlfs...) "
                               "or use a local or network-mounted folder") from None
        return value if fs is not None else local
    return Path(value).expanduser().resolve()


_CHECKED_ARMS: dict[tuple, tuple[tuple[tuple[str, str | None], ...], Arms]] = {}


def _listing(folder: Path) -> tuple[str, ...]:
    """The names in `folder` (none when it is missing), sorted."""
    try:
        return tuple(sorted(os.listdir(folder)))
    except (FileNotFoundError, NotADirectoryError):
        return ()


@dataclass(frozen=True)
class Lab:
    arms_file: Path
    datasets_dir: Path
    prompts_dir: Path
    home: Path  # or the UPath of an s3:// home (adapters/object_store.py)
    # None: `home/provider_cache`. A folder or an fsspec URI, so several stores (machines) share one cache.
    provider_cache: str | Path | None = None

    @classmethod
    def from_env(cls, arms_file=None, datasets_dir=None, prompts_dir=None, home=None, provider_cache=None) -> Lab:
        return cls(
            arms_file=_path(arms_file, "RAG_TTC_ARMS", PROJECT_ROOT / "arms.yaml"),
            datasets_dir=_path(datasets_dir, "RAG_TTC_DATASETS", PROJECT_ROOT / "datasets"),
            prompts_dir=_path(prompts_dir, "RAG_TTC_PROMPTS", PROJECT_ROOT / "prompts"),
            home=_home(home, PROJECT_ROOT / ".rag_ttc"),
            provider_cache=_cache_location(provider_cache),
        )

    @property
    def provider_cache_root(self) -> str | Path:
        """Where provider results are cached: RAG_TTC_PROVIDER_CACHE (a folder or an fsspec URI) or home/provider_cache."""
        if self.provider_cache is not None:
            return self.provider_cache
        return self.home / "provider_cache" if self.local else str(self.home / "provider_cache")

    @property
    def runs(self) -> RunFolders:
        """Where the run records live: `home/runs/<arm>/<run>` (stages.run_record)."""
        return RunFolders(self.home / "runs", self.local)

    @property
    def local(self) -> bool:
        """Whether the store is a local folder (else an object store: RAG_TTC_HOME=s3://...)."""
        return isinstance(self.home, Path)

    @cached_property
    def arms(self) -> Arms:
        """The arms file, parsed and checked against the datasets and the prompts it names: once per process for the
        same bytes of the arms file and of those prompts and the same dataset folders (every asset step builds
        several Labs). Nothing is read to look the check up: the files' digests are the ones remembered when they
        were read (adapters/input_files.py), so a file edited since is read and checked again."""
        key = (str(self.arms_file), known_digest(self.arms_file), str(self.datasets_dir), _listing(self.datasets_dir),
               str(self.prompts_dir))
        known = _CHECKED_ARMS.get(key) if key[1] is not None else None
        if known is not None and all(known_digest(self.prompts_dir / f) == d for f, d in known[0]):
            return known[1]
        arms = self._checked_arms()
        prompts = sorted({f"{getattr(cfg, field)}.txt" for cfg in arms.arms.values() for field in prompt_fields(cfg)})
        # Remembered only when every file's digest is known (a file written in the last seconds is read each time).
        key = (*key[:1], known_digest(self.arms_file), *key[2:])
        digests = tuple((f, known_digest(self.prompts_dir / f)) for f in prompts)
        if key[1] is not None and all(d is not None for _, d in digests):
            if len(_CHECKED_ARMS) >= 16:
                _CHECKED_ARMS.clear()
            _CHECKED_ARMS[key] = (digests, arms)
        return arms

    def _checked_arms(self) -> Arms:
        arms = load_arms(self.arms_file)
        # Each (prompt, kind) read and checked once: the arms share a handful of prompts.
        checked: dict[tuple[str, str], Prompt] = {}
        for name, cfg in arms.arms.items():
            if not (self.datasets_dir / cfg.dataset).is_dir():
                raise ArmsError(
                    f"{self.arms_file}: arm {name!r}: field 'dataset': unknown dataset {cfg.dataset!r} "
                    f"(no folder {self.datasets_dir / cfg.dataset})"
                )
            try:
                embeddings.check_model(cfg.embedding_model)
            except ValueError as e:
                raise ArmsError(f"{self.arms_file}: arm {name!r}: field 'embedding_model': {e}") from None
            for field, kind in prompt_fields(cfg).items():
                try:
                    key = (getattr(cfg, field), kind)
                    p = checked[key] if key in checked else checked.setdefault(key, self.prompt(*key))
                except (PromptError, FileNotFoundError) as e:
                    raise ArmsError(f"{self.arms_file}: arm {name!r}: field {field!r}: {e}") from None
                if kind in GENERATION_KINDS and LABEL_PLACEHOLDER in p.placeholders and cfg.requests_in_prompt != ORACLE:
                    raise ArmsError(
                        f"{self.arms_file}: arm {name!r}: field 'requests_in_prompt': prompt {p.name!r} (field "
                        f"{field!r}) renders {{{{requests}}}}, the evaluation's request annotation, into the "
                        "generator's prompt; labels never reach the system under test. Use a prompt without "
                        "{{requests}}, or declare the arm an oracle (requests_in_prompt: oracle), a diagnostic "
                        "upper bound named as oracle in every output")
                if field == "prompt" and cfg.title_index != ("title_index" in p.placeholders):
                    raise ArmsError(
                        f"{self.arms_file}: arm {name!r}: field 'title_index': title_index is {cfg.title_index} "
                        f"but prompt {p.name!r} {'lacks' if cfg.title_index else 'has'} a {{{{title_index}}}} "
                        "placeholder; pick a prompt that matches")
            if cfg.requests_in_prompt == ORACLE and not any(
                    LABEL_PLACEHOLDER in checked[(getattr(cfg, f), k)].placeholders
                    for f, k in prompt_fields(cfg).items() if k in GENERATION_KINDS):
                raise ArmsError(
                    f"{self.arms_file}: arm {name!r}: field 'requests_in_prompt': the arm is declared oracle but "
                    f"its prompt {cfg.prompt!r} renders no {{{{requests}}}}; drop the declaration or use an oracle "
                    "prompt")
        return arms

    def fingerprint_inputs(self, cfg) -> dict[str, str]:
        """Digests of what an arm reads besides its config: the dataset files and the prompt texts.

        `dataset` is the corpus; `labels` the evaluation and its derived requests, read only by the assets that
        declare it (`arm_asset(reads=("labels",))`): a labels update leaves chunks and indexes current."""
        ds = self.dataset_dir(cfg.dataset)
        # The store folder too: the same arm materialized into another store is not up to date there.
        out = {"dataset": ":".join([str(self.home), _file_digest(ds / "corpus.json")]),
               LABELS_INPUT: ":".join(_file_digest(ds / f) for f in ("evaluation.json", "derived_requests.json"))}
        for field in prompt_fields(cfg):
            out[field] = _file_digest(self.prompts_dir / f"{getattr(cfg, field)}.txt")
        # An imported arm's source file, relative to the arms file. A Phoenix project is not read to fingerprint it
        # (its endpoint and project are in the config): after new traces, `rag-ttc run --force` reads it again.
        # The learned juror's parameters file (adapters.learned_juror), read by the request judge: a refit makes the arm's
        # request judgments stale, keyed by the field that names the juror.
        if uses_learned_juror(cfg):
            out["request_judges" if cfg.request_judges else "request_judge"] = _file_digest(parameters_path())
        if cfg.source is not None and not cfg.source.server:
            p = Path(cfg.source.file)
            out["source"] = _file_digest(p if p.is_absolute() else self.arms_file.parent / p)
        return out

    def prompt(self, name: str, kind: str) -> Prompt:
        return load_prompt(self.prompts_dir / f"{name}.txt", name, kind)

    @cached_property
    def store(self) -> ArtifactStore:
        if self.local:
            return ArtifactStore(self.home / "store")

        return ObjectArtifactStore(self.home / "store", local_cache_dir())

    def dataset_dir(self, name: str) -> Path:
        return self.datasets_dir / name

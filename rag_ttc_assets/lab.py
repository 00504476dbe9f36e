"""Where the lab's inputs and outputs live: arms file, datasets folder, prompts, artifact store.

Resolved the same way for the CLI, `dagster dev` and tests: explicit argument, then the
`RAG_TTC_*` environment variables, then the project folder.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from rag_ttc_assets.adapters import embeddings
from rag_ttc_assets.adapters.store import ArtifactStore
from rag_ttc_assets.adapters.files import load_arms
from rag_ttc_assets.core.arms import Arms, ArmsError
from rag_ttc_assets.core.representations import MODEL_BUILT
from rag_ttc_assets.core.prompts import (GENERATION_KINDS, LABEL_PLACEHOLDER, ORACLE, Prompt, PromptError,
                                         parse_prompt)

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
    return fields

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"


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
    from rag_ttc_assets.adapters.object_store import SCHEMES, is_object_uri, remote_root

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
        from rag_ttc_assets.adapters.provider_cache import remote_filesystem

        where = "argument" if explicit else env
        try:
            fs, local = remote_filesystem(value)
        except ValueError as e:
            raise LabPathError(f"{where}: {e}; install that protocol's fsspec package (s3fs, gcsfs, adlfs...) "
                               "or use a local or network-mounted folder") from None
        return value if fs is not None else local
    return Path(value).expanduser().resolve()


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
    def local(self) -> bool:
        """Whether the store is a local folder (else an object store: RAG_TTC_HOME=s3://...)."""
        return isinstance(self.home, Path)

    @cached_property
    def arms(self) -> Arms:
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
        """Digests of what an arm reads besides its config: the dataset files and the prompt texts."""
        ds = self.dataset_dir(cfg.dataset)
        # The store folder too: the same arm materialized into another store is not up to date there.
        files = [_file_digest(ds / f) for f in ("corpus.json", "evaluation.json")]
        out = {"dataset": ":".join([str(self.home), *files])}
        for field in prompt_fields(cfg):
            out[field] = _file_digest(self.prompts_dir / f"{getattr(cfg, field)}.txt")
        if cfg.source is not None:  # an imported arm's source file, relative to the arms file
            p = Path(cfg.source.file)
            out["source"] = _file_digest(p if p.is_absolute() else self.arms_file.parent / p)
        return out

    def prompt(self, name: str, kind: str) -> Prompt:
        path = self.prompts_dir / f"{name}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"unknown prompt {name!r} (no file {path})")
        return parse_prompt(name, path.read_text(encoding="utf-8"), kind, str(path))

    @cached_property
    def store(self) -> ArtifactStore:
        if self.local:
            return ArtifactStore(self.home / "store")
        from rag_ttc_assets.adapters.object_store import ObjectArtifactStore, local_cache_dir

        return ObjectArtifactStore(self.home / "store", local_cache_dir())

    def dataset_dir(self, name: str) -> Path:
        return self.datasets_dir / name

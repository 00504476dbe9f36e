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

from rag_ttc_assets.adapters.store import ArtifactStore
from rag_ttc_assets.core.arms import Arms, ArmsError, load_arms
from rag_ttc_assets.core.prompts import Prompt, PromptError, parse_prompt

PROMPT_FIELDS = {"prompt": "answer", "judge_statements_prompt": "judge_statements",
                 "judge_verdicts_prompt": "judge_verdicts", "judge_gold_prompt": "judge_gold"}

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"


def _path(explicit: str | Path | None, env: str, default: Path) -> Path:
    value = explicit or os.environ.get(env) or default
    return Path(value).expanduser().resolve()


@dataclass(frozen=True)
class Lab:
    arms_file: Path
    datasets_dir: Path
    prompts_dir: Path
    home: Path

    @classmethod
    def from_env(cls, arms_file=None, datasets_dir=None, prompts_dir=None, home=None) -> Lab:
        return cls(
            arms_file=_path(arms_file, "RAG_TTC_ARMS", PROJECT_ROOT / "arms.yaml"),
            datasets_dir=_path(datasets_dir, "RAG_TTC_DATASETS", PROJECT_ROOT / "datasets"),
            prompts_dir=_path(prompts_dir, "RAG_TTC_PROMPTS", PROJECT_ROOT / "prompts"),
            home=_path(home, "RAG_TTC_HOME", PROJECT_ROOT / ".rag_ttc"),
        )

    @cached_property
    def arms(self) -> Arms:
        arms = load_arms(self.arms_file)
        for name, cfg in arms.arms.items():
            if not (self.datasets_dir / cfg.dataset).is_dir():
                raise ArmsError(
                    f"{self.arms_file}: arm {name!r}: field 'dataset': unknown dataset {cfg.dataset!r} "
                    f"(no folder {self.datasets_dir / cfg.dataset})"
                )
            for field, kind in PROMPT_FIELDS.items():
                try:
                    self.prompt(getattr(cfg, field), kind)
                except (PromptError, FileNotFoundError) as e:
                    raise ArmsError(f"{self.arms_file}: arm {name!r}: field {field!r}: {e}") from None
        return arms

    def fingerprint_inputs(self, cfg) -> dict[str, str]:
        """Digests of what an arm reads besides its config: the dataset files and the prompt texts."""
        ds = self.dataset_dir(cfg.dataset)
        # The store folder too: the same arm materialized into another store is not up to date there.
        files = [_file_digest(ds / f) for f in ("corpus.json", "evaluation.json")]
        out = {"dataset": ":".join([str(self.home), *files])}
        for field, kind in PROMPT_FIELDS.items():
            out[field] = _file_digest(self.prompts_dir / f"{getattr(cfg, field)}.txt")
        return out

    def prompt(self, name: str, kind: str) -> Prompt:
        path = self.prompts_dir / f"{name}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"unknown prompt {name!r} (no file {path})")
        return parse_prompt(name, path.read_text(encoding="utf-8"), kind, str(path))

    @cached_property
    def store(self) -> ArtifactStore:
        return ArtifactStore(self.home / "store")

    def dataset_dir(self, name: str) -> Path:
        return self.datasets_dir / name

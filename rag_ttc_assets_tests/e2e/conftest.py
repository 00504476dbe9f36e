"""Fixtures of the end-to-end tests."""

import shutil

import pytest

from rag_ttc_assets_tests.support.phoenix_server import phoenix_fixture
from rag_ttc_assets_tests.support.postgres_server import postgres_fixture

postgres_server = postgres_fixture()  # one real PostgreSQL server per test session, for the tests that ask
phoenix_server = phoenix_fixture()  # one real Phoenix server per test session (`phoenix serve`), likewise
REL_N = 40  # questions of the `rel` dataset the reliability tests share


@pytest.fixture(scope="session")
def warm_cache(tmp_path_factory):
    """The shared artifacts (chunks, representations, both indexes, question embeddings) of the `rel` dataset
    at the reliability arms' chunking, built once: a store a user would have after an earlier run. Seeding a
    home with them keeps CLI subprocesses from loading the embedding model."""
    from dagster import DagsterInstance

    from rag_ttc_assets.defs.graph import upstream
    from rag_ttc_assets_tests.support.reliability import arms_text, lab_env, materialize, synthetic_dataset

    root = tmp_path_factory.mktemp("warm")
    synthetic_dataset(root / "datasets" / "rel", REL_N)
    (root / "arms.yaml").write_text(arms_text("rel", {"seed": {}}))
    with pytest.MonkeyPatch.context() as mp:
        for k, v in lab_env(root).items():
            mp.setenv(k, v)
        assert materialize("seed", DagsterInstance.ephemeral(),
                           list(upstream("retrieval_rows"))).success
    return root / "home" / "store" / "cache"


@pytest.fixture
def rel_lab(tmp_path, warm_cache):
    """A lab under tmp_path with the `rel` dataset and a store seeded from `warm_cache`."""
    from rag_ttc_assets_tests.support.reliability import synthetic_dataset

    synthetic_dataset(tmp_path / "datasets" / "rel", REL_N)
    shutil.copytree(warm_cache, tmp_path / "home" / "store" / "cache")
    return tmp_path

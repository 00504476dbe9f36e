"""RAG_TTC_EXECUTOR picks the executor of the definitions; a wrong value or a missing scheduler says which
variable and what to set. (The dask executor itself runs in e2e/test_cluster.py, on real workers.)"""

import pytest

from rag_ttc_assets.defs.executors import ExecutorError, executor_from_env


def test_unset_is_dagsters_default():
    assert executor_from_env({}) is None
    assert executor_from_env({"RAG_TTC_EXECUTOR": "default"}) is None


def test_multiprocess_and_dask_are_dagster_executors():
    assert executor_from_env({"RAG_TTC_EXECUTOR": "multiprocess"}).name == "multiprocess"
    dask = executor_from_env({"RAG_TTC_EXECUTOR": "dask", "RAG_TTC_DASK_SCHEDULER": "tcp://127.0.0.1:1"})
    assert dask.name == "dask"


@pytest.mark.parametrize("env, words", [
    ({"RAG_TTC_EXECUTOR": "celery"}, ["RAG_TTC_EXECUTOR='celery'", "default, multiprocess, dask"]),
    ({"RAG_TTC_EXECUTOR": "dask"}, ["RAG_TTC_DASK_SCHEDULER", "tcp://"]),
])
def test_a_wrong_choice_names_the_variable(env, words):
    with pytest.raises(ExecutorError) as e:
        executor_from_env(env)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_the_job_carries_the_chosen_executor(mini_lab, monkeypatch):
    from rag_ttc_assets.definitions import JOB, build_definitions

    monkeypatch.setenv("RAG_TTC_EXECUTOR", "dask")
    monkeypatch.setenv("RAG_TTC_DASK_SCHEDULER", "tcp://127.0.0.1:1")
    assert build_definitions().resolve_job_def(JOB).executor_def.name == "dask"
    monkeypatch.delenv("RAG_TTC_EXECUTOR")
    assert build_definitions().resolve_job_def(JOB).executor_def.name == "multi_or_in_process_executor"

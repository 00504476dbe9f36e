"""A Phoenix server (Arize Phoenix), through Phoenix's own client (`phoenix.client.Client`, the
`arize-phoenix-client` package of the `phoenix` extra): a project's spans read for an imported arm, and the lab's
diagnosis written back as span annotations. Failures become imported.import_source.ImportSourceError naming the server and
the project."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_ttc_assets.imported.import_source import ImportSourceError

MISSING = ("the Phoenix client is not installed (phoenix.client, the `arize-phoenix-client` package): "
           "pip install 'rag-ttc-assets[phoenix]'")
PAGE = 1000  # spans a request; get_spans pages on until the project has no more
TIMEOUT_S = 60


def _client_class():
    """phoenix.client.Client. `phoenix` is a namespace both packages share; with the server (`arize-phoenix`)
    installed, its `phoenix/__init__.py` imports the whole server and notebook session (over a minute on a busy
    machine) before the client. When `phoenix` is not imported yet, it is entered as the bare namespace package it
    is for a client-only install, so the client loads alone."""
    import importlib.util
    import sys
    import types

    if "phoenix" not in sys.modules:
        spec = importlib.util.find_spec("phoenix")
        if spec is not None and spec.submodule_search_locations:
            namespace = types.ModuleType("phoenix")
            namespace.__path__ = list(spec.submodule_search_locations)
            namespace.__spec__ = spec
            sys.modules["phoenix"] = namespace
    from phoenix.client import Client

    return Client


def client(endpoint: str, where: str):
    try:
        Client = _client_class()
    except ImportError as e:
        raise ImportSourceError(f"{where}: {MISSING} ({e})") from None
    return Client(base_url=endpoint)


def _fail(e: Exception, endpoint: str, project: str, where: str, doing: str) -> ImportSourceError:
    import httpx

    if isinstance(e, httpx.HTTPStatusError) and e.response.status_code == 404:
        return ImportSourceError(f"{where}: the Phoenix server at {endpoint} has no project {project!r} "
                                 "(field 'source.project'; the projects are listed in its UI and at /v1/projects)")
    if isinstance(e, httpx.HTTPStatusError):
        return ImportSourceError(f"{where}: the Phoenix server at {endpoint} (project {project!r}) answered "
                                 f"{doing} with HTTP {e.response.status_code}: {e.response.text[:200]}")
    return ImportSourceError(f"{where}: the Phoenix server at {endpoint} (field 'source.endpoint') is unreachable "
                             f"{doing} for project {project!r}: {type(e).__name__}: {e}")


def read_spans(endpoint: str, project: str, where: str) -> list[dict[str, Any]]:
    """Every span of `project`, as the server's REST API returns them."""
    import httpx

    phoenix = client(endpoint, where)
    try:
        spans = list(phoenix.spans.get_spans(project_identifier=project, limit=10**12, timeout=TIMEOUT_S))
    except httpx.HTTPError as e:
        raise _fail(e, endpoint, project, where, "reading spans") from None
    return [dict(s) for s in spans]


def annotate_spans(endpoint: str, project: str, annotations: Sequence[dict[str, Any]], where: str) -> int:
    """Log span annotations (phoenix.client's SpanAnnotationData: span_id, name, annotator_kind, result
    {label, score, explanation}, metadata, identifier), synchronously; an annotation of the same name, span and
    identifier replaces the earlier one. Returns how many the server inserted or updated."""
    import httpx

    if not annotations:
        return 0
    phoenix = client(endpoint, where)
    done = 0
    try:
        for i in range(0, len(annotations), PAGE):
            done += len(phoenix.spans.log_span_annotations(span_annotations=annotations[i:i + PAGE], sync=True)
                        or [])
    except httpx.HTTPError as e:
        raise _fail(e, endpoint, project, where, "logging annotations") from None
    return done


def read_annotations(endpoint: str, project: str, span_ids: Sequence[str], names: Sequence[str] | None = None,
                     where: str = "phoenix") -> list[dict[str, Any]]:
    """The span annotations of `span_ids` in `project` (optionally only those named `names`)."""
    import httpx

    phoenix = client(endpoint, where)
    try:
        return [dict(a) for a in phoenix.spans.get_span_annotations(
            span_ids=list(span_ids), project_identifier=project, include_annotation_names=names)]
    except httpx.HTTPError as e:
        raise _fail(e, endpoint, project, where, "reading annotations") from None

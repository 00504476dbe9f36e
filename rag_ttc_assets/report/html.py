"""Render a case report's model (report.model) as one self-contained HTML file.

No network: the style and the script are inline, the plots are data: URIs, and the data is one JSON blob in a
<script type="application/json"> element.  Corpus text, questions and model output are untrusted: the blob
escapes `<`, `>` and `&` (and U+2028/U+2029) as \\uXXXX, so no text can close the element or open a comment,
and the script puts every string on the page with textContent, never as markup.  A Content-Security-Policy
allows only the page's own script (by its hash) and no network at all, so even markup that got in could not
run or fetch anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(obj: Any) -> str:
    """JSON safe to place inside a <script> element: no `</script>`, `<!--` or `]]>` can appear in it."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return "".join(_ESCAPES.get(ch, ch) for ch in text) if any(ch in text for ch in _ESCAPES) else text


@cache
def _asset(name: str) -> str:
    return resources.files("rag_ttc_assets.report").joinpath(name).read_text(encoding="utf-8")


def render(model: dict) -> str:
    """The report page for `model` (a pair or one arm's report)."""
    script = _asset("page.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>rag-ttc report</title>\n"
        f"<style>{_asset('page.css')}</style>\n</head><body>\n"
        "<main id=\"app\"><p id=\"loading\">Loading the report…</p></main>\n"
        f"<script type=\"application/json\" id=\"report-data\">{script_json(model)}</script>\n"
        f"<script>{script}</script>\n</body></html>\n")

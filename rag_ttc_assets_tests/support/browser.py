"""What the browser tests need: Debian's Chromium (/usr/bin/chromium, or $RAG_TTC_CHROMIUM) driven through the
`playwright` package (never `playwright install`, which downloads a browser).

`BROWSER` is the marks of every browser test: skipped without either, naming what is missing; failed under
RAG_TTC_REQUIRE_ALL (.ci/run), so CI cannot pass with its browser tests unrun.
"""

from __future__ import annotations

import os
from pathlib import Path

from rag_ttc_assets_tests.support.required import needs, optional_import

CHROMIUM = Path(os.environ.get("RAG_TTC_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
NO_CHROMIUM = None if CHROMIUM.exists() else f"no browser: {CHROMIUM} is missing (apt-get install chromium)"
# None when playwright is missing, or installed with a broken greenlet.
sync_api, NO_PLAYWRIGHT = optional_import(
    "playwright.sync_api", "playwright is not importable (pip install -c constraints.txt -e '.[test]')")
BROWSER = [needs(NO_PLAYWRIGHT), needs(NO_CHROMIUM)]

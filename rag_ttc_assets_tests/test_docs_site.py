"""The documentation: the mkdocs site builds strictly (a broken link or anchor, or a page under docs/ missing from
the nav, fails it), and every relative link of README.md names a file, and a heading, that exists.

The builds run the virtualenv's own `mkdocs` (mkdocs-material is in the `test` extra) as a subprocess, as
`make docs` does; the failing cases are planted in a copy of the site's files, never in the repository."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_ttc_assets_tests.conftest import REPO

MKDOCS = Path(sys.executable).with_name("mkdocs")
BUILD_TIMEOUT_S = 300


def build(root: Path, out: Path) -> subprocess.CompletedProcess:
    if not MKDOCS.exists():
        pytest.fail(f"{MKDOCS} is missing: install the test extra (pip install -c constraints.txt -e '.[test]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(out)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)


def site_copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copy(REPO / "README.md", root / "README.md")
    shutil.copytree(REPO / "docs", root / "docs")
    return root


def _without_code(markdown: str) -> str:
    """The text outside fenced code blocks and inline code spans (links there are not links)."""
    out, fence = [], None
    for line in markdown.split("\n"):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m and fence is None:
            fence = m.group(1)
        elif m and fence is not None and line.strip() == fence[0] * len(line.strip()) and len(line.strip()) >= len(fence):
            fence = None
        elif fence is None:
            out.append(re.sub(r"`+[^`]*`+", "", line))
    return "\n".join(out)


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and mkdocs' toc make it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", _without_code(markdown), re.M)}


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def broken_links(readme: Path, root: Path) -> list[str]:
    """Each relative link or image of `readme` whose file (relative to `root`) or heading does not exist."""
    text = readme.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(_without_code(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        if path and not (root / path).exists():
            broken.append(f"{target}: no file {path}")
            continue
        if anchor:
            doc = text if not path else (root / path).read_text(encoding="utf-8") if path.endswith(".md") else None
            if doc is not None and anchor not in _anchors(doc):
                broken.append(f"{target}: no heading #{anchor} in {path or readme.name}")
    return broken


def test_the_site_builds_strictly_with_every_page(tmp_path):
    proc = build(REPO, tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pages = sorted(p.relative_to(REPO / "docs").with_suffix("") for p in (REPO / "docs").rglob("*.md"))
    assert len(pages) >= 15
    for page in pages:
        html = tmp_path / "site" / ("index.html" if page.name == "index" else page / "index.html")
        assert html.exists(), f"docs/{page}.md built no page"
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    # The home page is the README itself: its sections and its links to the pages, made relative to docs/.
    for heading in re.findall(r"^## (.+)$", (REPO / "README.md").read_text(encoding="utf-8"), re.M):
        assert f'id="{_slug(heading)}"' in home, heading
    assert 'href="instrument/"' in home and 'src="screenshots/01-asset-graph.png"' in home


@pytest.mark.parametrize("path, text, named", [
    ("docs/ui.md", "\n[gone](no-such-page.md)\n", "no-such-page.md"),
    ("docs/ui.md", "\n[gone](arms.md#no-such-heading)\n", "no-such-heading"),
    ("docs/orphan.md", "# Not in the nav\n", "orphan.md"),
    ("README.md", "\n[gone](docs/no-such-page.md)\n", "no-such-page.md"),
], ids=["broken-link", "broken-anchor", "page-missing-from-nav", "broken-link-in-readme"])
def test_the_strict_build_fails_on_what_was_planted(tmp_path, path, text, named):
    root = site_copy(tmp_path)
    with (root / path).open("a", encoding="utf-8") as f:
        f.write(text)
    proc = build(root, tmp_path / "site")
    assert proc.returncode != 0
    # mkdocs' log entries ("WARNING -  ..."), each with the indented lines that continue it
    entries = re.split(r"\n(?=[A-Z]+ +- )", proc.stdout + proc.stderr)
    warnings = [e for e in entries if e.startswith("WARNING")]
    assert warnings and all(named in line for line in warnings), warnings  # the plant, and nothing else, fails it


def test_every_relative_link_of_the_readme_exists():
    assert broken_links(REPO / "README.md", REPO) == []
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)\)", readme))
    # The README lists every page of the site (the home page is the README itself).
    assert linked == {p.name for p in (REPO / "docs").glob("*.md")} - {"index.md"}


def test_a_planted_broken_readme_link_is_found(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text((REPO / "README.md").read_text(encoding="utf-8")
                      + "\n[gone](docs/gone.md) ![shot](docs/screenshots/none.png) [here](#no-such-heading)"
                      + " [there](docs/arms.md#no-such-heading) `[code](not-a-link.md)`\n", encoding="utf-8")
    assert broken_links(readme, REPO) == [
        "docs/gone.md: no file docs/gone.md",
        "docs/screenshots/none.png: no file docs/screenshots/none.png",
        "#no-such-heading: no heading #no-such-heading in README.md",
        "docs/arms.md#no-such-heading: no heading #no-such-heading in docs/arms.md",
    ]

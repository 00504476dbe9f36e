"""mkdocs hook: the site's home page is the README itself, its links made relative to docs/.

The README links its pages as `docs/<page>.md` (right on a clone and on the forge); in the site the home page
sits inside docs/, so those links lose their `docs/` prefix here. The strict build then checks every one of them.
"""
import re
from pathlib import Path

HOME = "index.md"


def on_page_markdown(markdown, page, config, files, **kwargs):
    if page.file.src_uri != HOME:
        return markdown
    readme = Path(config.config_file_path).parent / "README.md"
    return re.sub(r"\]\(docs/", "](", readme.read_text(encoding="utf-8"))

"""The README and the pages under docs/ hold together: every relative link names a file that exists,
and every `#anchor` names a heading of its target, as GitHub spells a heading's anchor. Links to
other sites are not followed (the suite runs offline)."""

import re
from pathlib import Path

import pytest

from tests.paths import REPO as ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, ...


def prose(text: str) -> str:
    """The text outside fenced code blocks: a `# comment` in a shell block is not a heading."""
    return FENCE.sub("", text)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces made hyphens."""
    text = heading.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page's headings make; a repeated heading's anchor gains -1, -2, ..."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(page.read_text(encoding="utf-8"))):
        slug = anchor(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    text = INLINE_CODE.sub("", prose(page.read_text(encoding="utf-8")))
    return [target for target in LINK.findall(text) if not EXTERNAL.match(target)]


def test_the_pages_are_found():
    assert len(PAGES) > 1, "docs/*.md is empty"
    assert all(page.is_file() for page in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_every_relative_link_resolves(page):
    broken = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no file {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved}")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {resolved.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_readme_stays_a_front_page():
    """A newcomer reads the README in five minutes; the rest belongs under docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail to docs/"


def test_anchors_follow_github():
    assert anchor("Metrics (`--json` keys)") == "metrics---json-keys"
    assert anchor("Serving: addresses and host names") == "serving-addresses-and-host-names"
    assert anchor("The websocket protocol (version 2)") == "the-websocket-protocol-version-2"

"""The docs stand on their own: no page cites a document the repository does not hold, every link resolves.

Users have the repository (or the package), not the design documents or the issue tracker it was
built from: a page, an example or a docstring of the package that cites "spec 000", a section of
such a document (often in Chinese), a numbered section of a reference, or an issue number points
them at nothing. Each must state the behaviour instead. Links between pages must land on a file
that exists and, with an `#anchor`, on one of its headings (GitHub's heading ids).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CITATIONS = {
    "a design document (spec 0NN)": re.compile(r"\bspecs?\s*0\d\d\b", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE),
    "a numbered section (§N)": re.compile(r"§\s*\d"),
    "a design document's sub-flow": re.compile(r"\bsub-flow\s*\d", re.IGNORECASE),
    "a section title in Chinese": re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]"),
}


def pages() -> list[Path]:
    docs = [REPO / "README.md", REPO / "infra/README.md", *sorted((REPO / "docs").glob("*.md"))]
    return docs + sorted((REPO / "examples").rglob("*.md"))


def sources() -> list[Path]:
    package = sorted((REPO / "shared/stepline").rglob("*.py"))
    return package + sorted((REPO / "examples").rglob("*.py"))  # the Lambda entry points are in the package


def citations(text: str) -> list[str]:
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in CITATIONS.items():
            if match := pattern.search(line):
                found.append(f"line {number}: {what}: {match.group(0)!r} in {line.strip()[:100]!r}")
    return found


@pytest.mark.parametrize("path", pages() + sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_page_or_docstring_cites_what_users_do_not_have(path: Path) -> None:
    assert citations(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "text",
    [
        "as spec 000 deduplicates",
        "Spec 004's client",
        "(issue 16)",
        "Before issue #12 a question",
        "the project reference (§6.2)",
        "(spec 000 sub-flow 3)",
        'the chat UI of "前端展示"',
    ],
)
def test_each_kind_of_citation_is_caught(text: str) -> None:
    assert citations(text) != []


def test_a_model_spec_or_a_number_is_not_a_citation() -> None:
    assert citations("a `provider:model-id` spec; 400 issues; Python 3.11 specs") == []


# -- links ----------------------------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def heading_ids(path: Path) -> set[str]:
    """GitHub's ids: lowercase, punctuation dropped, spaces to hyphens, `-1`, `-2` for repeats."""
    ids: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", path.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in ids:
            n += 1
            candidate = f"{slug}-{n}"
        ids.add(candidate)
    return ids


def links(path: Path) -> list[str]:
    return [target for target in LINK.findall(FENCE.sub("", path.read_text())) if "://" not in target]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_lands_on_a_file_and_a_heading(page: Path) -> None:
    broken: list[str] = []
    for target in links(page):
        if target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in heading_ids(destination):
            broken.append(f"{target}: no heading #{anchor} in {destination.relative_to(REPO)}")
    assert broken == []


def test_heading_ids_follow_githubs_rule(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# The `stepline` command\n## Front ends (CORS)\n## Retries\n## Retries\n```\n# no heading\n```\n")
    assert heading_ids(page) == {"the-stepline-command", "front-ends-cors", "retries", "retries-1"}

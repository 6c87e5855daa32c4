"""The pages a reader copies code from, and their fenced blocks.

Sybil (see test_docs_samples.py) runs each block on its own. Some checks need
a page as a whole: its quick start (the Python above its first section),
the files of a Django project named by their first line, the install line
under a heading. This module gives them the same blocks Sybil lexes, each
with the heading above it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sybil import Document
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

ROOT = Path(__file__).resolve().parent.parent
#: Every page a reader copies code from.
PAGES = [
    "README.md",
    *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md")),
]

#: A fence's info line: a language, and a title (what Material shows above the
#: block) that names the file the block is.
INFO = re.compile(r'(?P<language>[\w-]*)(?:[ \t]+title="(?P<title>[^"]+)")?[ \t]*$\n', re.MULTILINE)
FENCES = RawFencedCodeBlockLexer(
    INFO, mapping={"language": "language", "title": "title", "source": "source"}
)
HEADING = re.compile(r"^(?P<hashes>#+) (?P<text>.*)$", re.MULTILINE)
#: Sybil's marker for a block that is shown but not run, with its reason.
SKIP = re.compile(r"<!-- skip: next .+-->[ \t]*\n[ \t]*\Z")
#: The first line of a block that is a file of a project (``# mysite/wsgi.py``).
PROJECT_FILE = re.compile(r"^# (?P<path>\w+(?:/\w+)+\.py)\b")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page, its code without the fence's indentation."""

    page: str
    line: int  # of the opening fence, from 1
    language: str
    title: str | None
    code: str
    heading: str  # the text of the nearest heading above it
    level: int  # that heading's level (0: none)
    skipped: bool  # marked ``<!-- skip: next ... -->``: shown, not run

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def project_file(self) -> str | None:
        found = PROJECT_FILE.match(self.code) if self.language == "python" else None
        return found["path"] if found is not None else None


def page_blocks(page: str) -> list[Block]:
    """Every fenced block of ``page`` (a path from the project root), in order,
    indented ones (inside tabs and admonitions) included."""
    path = ROOT / page
    document = Document(path.read_text(encoding="utf-8"), str(path))
    blocks: list[Block] = []
    heading, level, after = "", 0, 0
    for region in FENCES(document):
        between = document.text[after : region.start]
        for found in HEADING.finditer(between):  # headings outside code blocks only
            heading, level = found["text"].strip(), len(found["hashes"])
        line = document.text.count("\n", 0, region.start) + 1
        lexemes = region.lexemes
        code = str(lexemes["source"]).removesuffix("\n")
        skipped = SKIP.search(between) is not None
        block = Block(
            page, line, lexemes["language"], lexemes["title"], code, heading, level, skipped
        )
        blocks.append(block)
        after = region.end
    return blocks


def commands(code: str) -> Iterator[list[str]]:
    """Each command of a shell block: comments dropped, ``&&`` chains split,
    a virtualenv's ``bin/`` prefix taken off the program."""
    for line in code.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            program, *args = words[:cut]
            yield [re.sub(r"^\.venv[\w-]*/bin/", "", program), *args]
            words = words[cut + 1 :]

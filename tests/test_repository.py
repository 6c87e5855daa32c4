"""The repository stands on its own, and the package says what it is.

Every file a user gets with a clone is readable without anything outside it:
no file may send the reader to documents the repository does not hold (the
project's docs under ``docs/`` say everything), name the source articles by a
number instead of their title, or point at tracker numbers. The version,
licence and addresses in the package metadata agree with the repository.

The patterns below are built from pieces, so that this file does not name
what it looks for.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

import urlguard

ROOT = Path(__file__).resolve().parent.parent
DOTS = "." * 2
MD = r"\.md\b"

#: What no file of the repository may say, and why.
FORBIDDEN: list[tuple[str, re.Pattern[str]]] = [
    ("a folder outside the repository", re.compile(re.escape(DOTS + "/" + "shared"))),
    ("a design file the repository does not hold", re.compile(r"\b" + "DESIGN" + MD)),
    ("a server survey the repository does not hold", re.compile(r"\b" + "LANDSCAPE" + MD)),
    (
        "a source article by number instead of its title",
        re.compile(r"(?<![a-z])" + "seeds?" + r"[ _-]?0[0-9]{2}(?![0-9])", re.IGNORECASE),
    ),
    (
        "a tracker number",
        re.compile(r"(?<![a-z])" + "issues?" + r"[ _-]?#?[0-9]+(?![0-9])", re.IGNORECASE),
    ),
]

#: Never scanned: what tools and virtual environments leave behind.
_SKIPPED_DIRS = frozenset(
    (".git", ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis")
)


def repository_files() -> list[Path]:
    """Every file a clone would hold (tracked, or new and not ignored); on a
    copy without git, every file under the root but tool caches and venvs."""
    git = shutil.which("git")
    if git is not None and (ROOT / ".git").exists():
        listed = subprocess.run(
            [git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        return sorted(ROOT / name for name in listed.split("\0") if name)
    files = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if any(p in _SKIPPED_DIRS or p.startswith(".venv") or p == "site" for p in parts):
            continue
        if path.is_file():
            files.append(path)
    return sorted(files)


def offending_lines(text: str) -> list[tuple[int, str]]:
    """(line number, what it names) for each line that names something forbidden."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN:
            if pattern.search(line):
                found.append((number, what))
    return found


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("see " + DOTS + "/shared/notes", id="shared folder"),
        pytest.param("as DESIGN" + ".md section 2 says", id="design file"),
        pytest.param("(measured, LANDSCAPE" + ".md)", id="landscape file"),
        pytest.param("the example of seed " + "003", id="seed by number"),
        pytest.param("Seed " + "001: encode each part", id="seed, capitalised"),
        pytest.param("def test_seed_" + "000_cheeseburger", id="seed in a name"),
        pytest.param("the benchmarks of issue " + "7", id="issue by number"),
        pytest.param("fixed in Issue #" + "12", id="issue with hash"),
    ],
)
def test_forbidden_references_are_found(line: str) -> None:
    assert offending_lines(line)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("How do you escape a complete URI? (2012)", id="article title"),
        pytest.param("RFC 3986 section 3.3, RFC 3629", id="RFC sections"),
        pytest.param("seed 20240607; 1661 distinct", id="a random seed"),
        pytest.param("fuzz/build_corpus.py writes the seed corpus", id="fuzzing seeds"),
        pytest.param("see docs/design-notes" + ".md and docs/servers.md", id="the project's docs"),
        pytest.param("coreruleset pull request #3969", id="another project's pull request"),
    ],
)
def test_own_references_are_not_found(line: str) -> None:
    assert offending_lines(line) == []


def test_no_file_refers_outside_the_repository() -> None:
    files = repository_files()
    assert ROOT / "README.md" in files
    hits = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # binary, or deleted but not yet committed
        for number, what in offending_lines(text):
            hits.append(f"{path.relative_to(ROOT)}:{number}: names {what}")
    assert hits == [], "\n".join(hits)


def pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project: dict[str, object] = tomllib.load(file)["project"]
    return project


def test_version_is_the_distributions() -> None:
    assert urlguard.__version__ == importlib.metadata.version("urlguard")
    assert urlguard.__version__ == pyproject()["version"]


def test_licence_is_shipped_with_the_package() -> None:
    metadata = importlib.metadata.metadata("urlguard")
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    shipped = importlib.metadata.files("urlguard") or []
    assert [f.name for f in shipped if f.name == "LICENSE"] == ["LICENSE"]


def test_documentation_site_and_metadata_name_the_same_addresses() -> None:
    urls = pyproject()["urls"]
    assert isinstance(urls, dict)
    mkdocs = (ROOT / "mkdocs.yml").read_text()
    site = re.search(r"^site_url: (\S+)$", mkdocs, re.MULTILINE)
    repo = re.search(r"^repo_url: (\S+)$", mkdocs, re.MULTILINE)
    assert site is not None
    assert repo is not None
    assert site[1] == urls["Documentation"]
    assert repo[1] == urls["Source"]


def test_readme_links_point_at_files_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if "://" not in link]
    assert "SECURITY.md" in local
    assert [link for link in local if not (ROOT / link).exists()] == []


def prose_files() -> list[Path]:
    """The pages a reader follows: the docs, and the Markdown files at the root."""
    return sorted([*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")])


#: A file of the repository named in backticks, and optionally a test in it.
_NAMED_FILE = re.compile(
    r"`((?:src|tests|example_apps|bench|fuzz|loadtest|docs)/[\w./-]+?\.(?:py|md|dict))"
    r"(?:::(\w+))?`"
)


def test_files_and_tests_named_in_the_docs_exist() -> None:
    named = [
        (page, match[1], match[2])
        for page in prose_files()
        for match in _NAMED_FILE.finditer(page.read_text(encoding="utf-8"))
    ]
    assert len(named) > 20
    missing = []
    for page, file, test in named:
        where = page.relative_to(ROOT)
        path = ROOT / file
        if not path.is_file():
            missing.append(f"{where}: {file}")
        elif test and not re.search(rf"^(?:async )?def {test}\(", path.read_text(), re.MULTILINE):
            missing.append(f"{where}: {file}::{test}")
    assert missing == [], "\n".join(missing)

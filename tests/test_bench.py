"""Smoke tests for the benchmarks: each part runs on a tiny budget (no timing
is asserted), as ``python -m bench`` in a subprocess from the project root.
The tests that need wrk or valgrind are marked ``timing`` (``tox -e bench``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import urlguard

ROOT = Path(__file__).resolve().parent.parent
FIGURE = r"[0-9][0-9,]*\.?[0-9]* \([0-9,.]+–[0-9,.]+\)"  # median (low–high)
PARSERS = ["reference"] if urlguard.IMPLEMENTATION == "python" else ["compiled", "reference"]
needs_git = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="bench.ab reads git"
)


def run(*argv: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def needs(tool: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(shutil.which(tool) is None, reason=f"apt-get install -y {tool}")


def table_row(out: str, first_cell: str) -> list[str]:
    """The cells after the first of the Markdown table row that starts with ``first_cell``."""
    found = re.search(rf"^\| {re.escape(first_cell)} \|(.*)\|$", out, re.MULTILINE)
    assert found is not None, (first_cell, out)
    return [cell.strip() for cell in found.group(1).split("|")]


@pytest.fixture(scope="module")
def quick_run() -> str:
    parts = ("corpus", "micro", "inprocess", "segments", "audit")
    return run("-m", "bench", "--quick", *(arg for p in parts for arg in ("--part", p)))


def test_header_says_what_was_measured(quick_run: str) -> None:
    for label in ("date", "command", "machine", "python", "commit", "parsers", "load"):
        assert re.search(rf"^{label} +\S", quick_run, re.MULTILINE), label


@pytest.mark.parametrize(
    ("kind", "count", "rejected"),
    [("plain", 1600, 0), ("encoded", 300, 0), ("malformed", 100, 100)],
)
def test_corpus_is_80_15_5(quick_run: str, kind: str, count: int, rejected: int) -> None:
    assert re.search(rf"^{kind} +{count} ", quick_run, re.MULTILINE), quick_run
    assert f"urlguard rejects {rejected}/{count} {kind}" in quick_run


@pytest.mark.parametrize(
    "measure",
    [
        "micro, plain: parser / floor",
        "micro, malformed: parser / naive",
        "in process, Starlette, encoded: guarded / bare",
        "in process, Flask, plain: guarded / bare",
        "`urlguard audit --json`, all lines distinct: lines/s",
    ],
)
def test_quick_run_fills_the_table(quick_run: str, measure: str) -> None:
    _, compiled, compiled_ir, pure_goal, pure, pure_ir, _, pure_verdict = table_row(
        quick_run, measure
    )
    for parser in PARSERS:
        assert re.fullmatch(FIGURE, compiled if parser == "compiled" else pure), parser
    if measure.startswith("in process"):  # the pure build's goals, judged when it ran
        assert pure_goal == ("≤ 1.30" if "Starlette" in measure else "≤ 1.08")
        assert pure_verdict in (("met", "not met") if "reference" in PARSERS else ("",))
    assert {compiled_ir, pure_ir} <= {"not measured", ""}
    end_to_end = table_row(quick_run, "end to end, uvicorn, plain: guarded / bare req/s")
    assert end_to_end[1 if PARSERS[0] == "compiled" else 4] == "not measured"  # not run


@pytest.mark.parametrize("app", ["starlette", "flask"])
def test_every_layer_runs_in_process_and_with_segment_routes(quick_run: str, app: str) -> None:
    for layer in ("bare", "noop", "floor", *(f"guarded-{p}" for p in PARSERS), "guarded-allowlist"):
        assert re.search(rf"^\| {app} \| plain \| {layer} \| {FIGURE} \|", quick_run, re.M), layer
    segments = rf"^\| {app} \| encoded \| {FIGURE} \| {FIGURE} \| [+-][0-9.]+ \([+-]"  # more
    assert re.search(segments, quick_run, re.M), quick_run
    # The instructions column: a ratio under valgrind, "-" without it.
    ir = r"(?:[0-9]\.[0-9]{3}|-)"
    kept = rf"^\| {app} \| kept %2F \| - \| {FIGURE} \| - \| - \| {ir} \|$"
    assert re.search(kept, quick_run, re.M), quick_run
    assert re.search(rf"^\| {app} \| plain \| .* \| {ir} \| {ir} \|$", quick_run, re.M)


def test_floor_makes_what_urlguard_makes(tmp_path: Path) -> None:
    pytest.importorskip("Cython")
    script = f"""
from pathlib import Path
from bench import floor
split = floor.load(floor.build(Path({str(tmp_path)!r})))  # checked on the way
try:
    floor.check(lambda raw: split(raw)[:1])
except AssertionError as error:
    print("refused:", error)
"""
    out = run("-c", script)
    assert re.search(r"^refused: the floor and the \w+ parser differ on b'/", out, re.M), out


@pytest.mark.parametrize(("tool", "part"), [("wrk", "e2e"), ("valgrind", "instructions")])
def test_a_part_without_its_tool_says_how_to_get_it(tool: str, part: str) -> None:
    folder = str(Path(sys.executable).parent)
    if shutil.which(tool, path=folder) is not None:
        pytest.skip(f"{tool} is installed beside the interpreter")
    out = run("-m", "bench", "--quick", "--part", part, env={**os.environ, "PATH": folder})
    assert f"skipped: {tool} is not installed (apt-get install -y {tool})" in out


@pytest.mark.timing
@pytest.mark.servers
@needs("wrk")
def test_e2e_runs_under_wrk() -> None:
    out = run("-m", "bench", "--quick", "--part", "e2e")
    for layer in ("bare", "guarded"):
        assert re.search(rf"^\| encoded \| {layer} \| {FIGURE} \|", out, re.MULTILINE), out
    assert "warning:" not in out  # wrk saw only 2xx answers and no socket errors
    cells = table_row(out, "end to end, uvicorn, encoded: guarded / bare req/s")
    assert re.fullmatch(FIGURE, cells[1 if PARSERS[0] == "compiled" else 3]), out


@pytest.mark.timing
@needs("valgrind")
def test_instructions_count_every_phase() -> None:
    out = run("-m", "bench", "--quick", "--part", "instructions")
    for parser in PARSERS:
        assert re.search(rf"^\| micro plain {parser} \| [0-9,]+ \|", out, re.MULTILINE), out
        cells = table_row(out, "in process, Starlette, plain: guarded / bare")
        assert float(cells[2 if parser == "compiled" else 5]) > 1, out  # a guard does something


@needs_git
@pytest.mark.parametrize(
    "build", [pytest.param([], id="built"), pytest.param(["--reference"], id="reference")]
)
def test_ab_compares_head_with_the_worktree(build: list[str]) -> None:
    out = run("-m", "bench.ab", "HEAD", "WORKTREE", "--rounds", "2", *build)
    implementation = "python" if build else urlguard.IMPLEMENTATION
    for side in ("A = HEAD", "B = WORKTREE"):
        assert re.search(rf"^{side}: the {implementation} parser \(/", out, re.MULTILINE), out
    for measure in ("micro malformed", "flask plain"):
        assert all(re.fullmatch(FIGURE, cell) for cell in table_row(out, measure)), out


@needs_git
def test_ab_refuses_an_unknown_revision() -> None:
    argv = [sys.executable, "-m", "bench.ab", "no-such-revision", "WORKTREE", "--reference"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "cannot read 'no-such-revision'" in done.stderr

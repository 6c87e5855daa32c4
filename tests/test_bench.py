"""Smoke tests for the benchmark suite (bench/): every part runs end to end
on a tiny budget and prints its table. No timing is asserted: these runs are
far too short to mean anything, and the machine is shared.

The tests that compare instruction counts, or that run the end-to-end part
under wrk for real, carry the ``timing`` marker: they are left out of the
default run and run by ``tox -e bench`` (``pytest -m timing``).

Each part runs as ``python -m bench --quick --part PART`` from the project
root, as a person would run it, so the suite is tested the way it is used
and ``bench`` need not be importable from the tests.
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
NUMBER = r"[0-9][0-9,]*(?:\.[0-9]+)?"


def run_bench(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None, module: str = "bench"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


def without_tool(tool: str) -> dict[str, str]:
    """The environment with ``PATH`` reduced to this interpreter's folder, so
    that ``tool`` cannot be found; skips the test if it still can."""
    folder = str(Path(sys.executable).parent)
    if shutil.which(tool, path=folder) is not None:
        pytest.skip(f"{tool} is installed beside the interpreter, in {folder}")
    return {**os.environ, "PATH": folder}


def require_tool(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (apt-get install -y {tool})")


def row(output: str, *cells: str) -> re.Match[str] | None:
    """The table row that starts with ``cells`` (whitespace between), then a number."""
    pattern = r"^" + r"\s+".join(re.escape(c) for c in cells) + r"\s+(" + NUMBER + r")"
    return re.search(pattern, output, re.MULTILINE)


@pytest.fixture(scope="module")
def corpus_run() -> str:
    done = run_bench("--part", "corpus")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    "label",
    [
        pytest.param(label, id=label)
        for label in ("date", "command", "machine", "python", "packages", "wrk", "commit")
    ],
)
def test_header_names_the_run(corpus_run: str, label: str) -> None:
    assert re.search(rf"^{label}\s+\S", corpus_run, re.MULTILINE), corpus_run


def test_header_has_versions_and_load_before_and_after(corpus_run: str) -> None:
    assert re.search(r"^packages .*\burlguard [0-9]", corpus_run, re.MULTILINE)
    assert re.search(r"^packages .*\bstarlette [0-9]", corpus_run, re.MULTILINE)
    assert re.search(r"^load .* before$", corpus_run, re.MULTILINE)
    assert re.search(r"^load .* after;", corpus_run, re.MULTILINE)


@pytest.mark.parametrize(
    ("kind", "count"),
    [
        pytest.param("plain", 1600, id="80 % plain ASCII"),
        pytest.param("encoded", 300, id="15 % percent-encoded UTF-8"),
        pytest.param("malformed", 100, id="5 % malformed"),
        pytest.param("all", 2000, id="2000 targets in all"),
    ],
)
def test_corpus_composition(corpus_run: str, kind: str, count: int) -> None:
    found = row(corpus_run, kind)
    assert found is not None, corpus_run
    assert int(found.group(1)) == count


@pytest.mark.parametrize(
    "verdict",
    [
        pytest.param("urlguard rejects 0/1600 plain\n", id="plain all accepted"),
        pytest.param("urlguard rejects 0/300 encoded\n", id="encoded all accepted"),
        pytest.param("urlguard rejects 100/100 malformed (", id="malformed all rejected"),
    ],
)
def test_corpus_kinds_are_what_they_say(corpus_run: str, verdict: str) -> None:
    assert verdict in corpus_run


def test_corpus_mean_length_is_about_50_bytes(corpus_run: str) -> None:
    mean = re.search(r"^all\s+2000\s+100\.0%\s+(" + NUMBER + ")", corpus_run, re.MULTILINE)
    assert mean is not None, corpus_run
    assert 45 <= float(mean.group(1)) <= 55


def test_corpus_is_the_same_on_every_run(corpus_run: str) -> None:
    again = run_bench("--part", "corpus").stdout
    assert (
        again.split("Corpus:")[1].split("load")[0]
        == corpus_run.split("Corpus:")[1].split("load")[0]
    )
    assert "seed 20240607" in again


def test_micro_prints_every_parser_for_every_subset() -> None:
    done = run_bench("--quick", "--part", "micro")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Micro: ns per target" in out
    for subset in ("mixed", "plain", "encoded", "malformed"):
        # The floor is built when the part runs (the test extra has Cython,
        # and the compiled parser needs a C compiler anyway).
        for parser in ("naive", "urlguard", "floor", "werkzeug"):
            assert row(out, subset, parser) is not None, (subset, parser, out)
        for optional, dist in (("yarl", "yarl"), ("ada-url", "ada-url")):
            printed = row(out, subset, optional) is not None
            assert printed or f"pip install {dist}" in out, (subset, optional)
    # urlguard rejects exactly the malformed twentieth; naive rejects nothing.
    assert re.search(r"^mixed\s+urlguard\s.*\s100/2000\s", out, re.MULTILINE), out
    assert re.search(r"^mixed\s+naive\s.*\s0/2000\s", out, re.MULTILINE), out
    assert re.search(r"^malformed\s+urlguard\s.*\s100/100\s", out, re.MULTILINE), out
    assert re.search(r"same segments and query on 1900/1900 ", out), out
    assert re.search(r"^micro: mixed corpus, urlguard/naive\s", out, re.MULTILINE), out


def test_inprocess_prints_every_variant() -> None:
    done = run_bench("--quick", "--part", "inprocess")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "In-process: µs per request" in out
    for app in ("starlette", "flask"):
        for target in ("plain", "encoded"):
            for layer in ("bare", "noop", "stored", "guarded"):
                assert row(out, app, target, layer) is not None, (app, target, layer, out)
    for goal in ("Starlette plain", "Starlette encoded", "Flask plain", "Flask encoded"):
        assert re.search(rf"^in-process: {goal}, guarded/bare\s", out, re.MULTILINE), goal
    # The guard's rejection of the hostile check target is not logged into the output.
    assert "rejected request target" not in done.stderr


def test_audit_prints_both_logs_both_ways() -> None:
    done = run_bench("--quick", "--part", "audit")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Audit: `urlguard audit --json` lines per second" in out
    for log in ("typical", "distinct"):
        for how in ("in-process", "subprocess"):
            found = row(out, log, how)
            assert found is not None, (log, how, out)
            assert found.group(1) == "2,000"  # every generated line was counted


def test_profile_prints_ladder_and_breakdowns() -> None:
    done = run_bench("--quick", "--part", "profile")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for target in ("plain", "encoded"):
        assert row(out, target, "parse_target(raw)") is not None, out
        assert row(out, target, "= ASGI middleware cost") is not None, out
        assert row(out, target, "= WSGI middleware cost") is not None, out
        assert f"parse_target + reads, {target}: " in out
        assert f"Starlette guarded request, {target}: " in out
        assert f"Flask guarded request, {target}: " in out
    assert "urlguard audit, all-distinct log, per line: " in out
    for rule in ("malformed-escape", "invalid-utf8", "encoded-slash", "raw-char", "fragment"):
        assert row(out, rule) is not None, (rule, out)


@pytest.mark.parametrize(
    ("module", "args"),
    [
        pytest.param("bench", ["--quick"], id="bench"),
        pytest.param("bench.adapters", ["HEAD"], id="bench.adapters"),
    ],
)
def test_instructions_without_valgrind_say_how_to_get_it(
    module: str, args: list[str], tmp_path: Path
) -> None:
    env = without_tool("valgrind")
    git = shutil.which("git")
    if git is not None:  # bench.adapters reads a revision with git
        (tmp_path / "git").symlink_to(git)
        env["PATH"] += os.pathsep + str(tmp_path)
    done = run_bench(*args, "--part", "instructions", env=env, module=module)
    assert done.returncode == 0, done.stderr
    assert "skipped: valgrind is not installed" in done.stdout
    assert "apt-get install -y valgrind" in done.stdout


@pytest.mark.timing
def test_instructions_counts() -> None:
    require_tool("valgrind")
    done = run_bench("--quick", "--part", "instructions")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    naive = row(out, "plain", "naive")
    strict = row(out, "plain", "urlguard")
    assert naive is not None, out
    assert strict is not None, out
    naive_ir = float(naive.group(1).replace(",", ""))
    strict_ir = float(strict.group(1).replace(",", ""))
    # Instruction counts, unlike times, hold on a shared machine: on plain
    # targets the parser urlguard runs does less work than unquote + split +
    # parse_qsl (bench/RESULTS.md has the counts).
    assert 1_000 < strict_ir < naive_ir, out
    layers = {}
    for layer in ("bare", "noop", "stored", "guarded"):
        found = row(out, "starlette", "plain", layer)
        assert found is not None, (layer, out)
        layers[layer] = float(found.group(1).replace(",", ""))
    # The guard does everything the stored layer does, and judges too.
    assert layers["stored"] < layers["guarded"], out
    # Ir, ×bare, simulated L1 misses and mispredicts against bare, CEst and its
    # ×bare: the guard costs something in both (seen: 1.123 and 1.132).
    guarded = re.search(r"^starlette\s+plain\s+guarded\s+(.+)$", out, re.MULTILINE)
    assert guarded is not None, out
    cells = guarded.group(1).split()
    assert len(cells) == 6, out
    assert float(cells[1]) > 1, out
    assert float(cells[5]) > 1, out


def test_e2e_without_wrk_says_how_to_get_it() -> None:
    done = run_bench("--quick", "--part", "e2e", timeout=180, env=without_tool("wrk"))
    assert done.returncode == 0, done.stderr
    assert "skipped: wrk is not installed" in done.stdout
    assert "apt-get install -y wrk" in done.stdout


@pytest.mark.timing
@pytest.mark.servers
def test_e2e_prints_every_server() -> None:
    require_tool("wrk")
    done = run_bench("--quick", "--part", "e2e", timeout=180)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "End to end: req/s under wrk" in out
    for server in ("uvicorn", "gunicorn"):
        for target in ("plain", "encoded"):
            for layer in ("bare", "guarded"):
                found = row(out, server, target, layer)
                assert found is not None, (server, target, layer, out)
                assert float(found.group(1).replace(",", "")) > 0
    assert re.search(r"^end to end: uvicorn plain, guarded/bare req/s\s", out, re.MULTILINE)
    # Servers and wrk on CPUs of their own wherever there are two and taskset.
    two = len(os.sched_getaffinity(0)) >= 2 and shutil.which("taskset") is not None
    assert ("servers on CPU " in out) == two, out
    assert ("not pinned" in out) == (not two), out
    # wrk saw only 2xx answers and no socket errors (the bench warns otherwise).
    assert "warning:" not in out, out


def test_run_py_works_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--part", "corpus"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert row(done.stdout, "all", "2000") is not None


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--part", "nope"], id="unknown part"),
        pytest.param(["--rounds", "many"], id="rounds not a number"),
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    done = run_bench(*args)
    assert done.returncode == 2
    assert "usage:" in done.stderr


def run_ab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.ab", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="bench.ab reads revisions with git")
def test_ab_compares_a_revision_with_the_worktree() -> None:
    done = run_ab("HEAD", "WORKTREE", "--rounds", "1", "--subset", "plain", "--subset", "malformed")
    assert done.returncode == 0, done.stderr
    assert "B = WORKTREE against A = HEAD" in done.stdout
    # A revision's archive holds no compiled module: the output says which parser each side runs.
    assert re.search(r"^A = HEAD: the python parser$", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"^B = WORKTREE: the (compiled|python) parser$", done.stdout, re.MULTILINE)
    # One round over 16 chunks of plain targets and one chunk of malformed ones.
    assert row(done.stdout, "plain") is not None, done.stdout
    assert row(done.stdout, "malformed") is not None, done.stdout
    assert re.search(r"^plain\s.*\s16$", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"^malformed\s.*\s1$", done.stdout, re.MULTILINE), done.stdout
    assert row(done.stdout, "encoded") is None


@pytest.mark.skipif(shutil.which("git") is None, reason="bench.ab reads revisions with git")
def test_ab_builds_a_revisions_compiled_parser() -> None:
    """With --build the revision's archive gets its compiled parser built
    (Cython is in the test extra, and the compiled parser needs a C compiler
    anyway): the revision runs the parser this process runs, the compiled
    one, or the reference where URLGUARD_NO_EXTENSIONS is set. (src/ as it
    is holds a compiled module only where it was built in place.)"""
    done = run_ab("HEAD", "WORKTREE", "--build", "--rounds", "1", "--subset", "malformed")
    assert done.returncode == 0, done.stderr
    line = f"A = HEAD: the {urlguard.IMPLEMENTATION} parser"
    assert re.search(f"^{line}$", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"^malformed\s.*\s1$", done.stdout, re.MULTILINE), done.stdout


def test_ab_refuses_an_unknown_revision() -> None:
    done = run_ab("no-such-revision", "WORKTREE", "--rounds", "1")
    assert done.returncode == 1
    assert "cannot read 'no-such-revision'" in done.stderr


def run_adapters(*args: str) -> subprocess.CompletedProcess[str]:
    return run_bench(*args, module="bench.adapters")


@pytest.mark.skipif(shutil.which("git") is None, reason="bench.adapters reads revisions with git")
def test_adapters_time_a_revision_against_the_worktree() -> None:
    done = run_adapters("HEAD", "--rounds", "2", "--part", "time")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"^command  python -m bench.adapters HEAD --rounds 2", out, re.MULTILINE)
    # Both versions on this process's parser, not on one each.
    assert re.search(r"^parser   the (compiled|python) one, for A and B alike", out, re.MULTILINE)
    for app in ("starlette", "flask"):
        for target in ("plain", "encoded"):
            for layer in ("bare", "guarded@HEAD", "guarded@WORKTREE"):
                assert row(out, app, target, layer) is not None, (app, target, layer, out)
            assert row(out, app, target) is not None, (app, target, out)  # B against A
    assert "B = guarded@WORKTREE against A = guarded@HEAD" in out
    assert "Instructions" not in out
    assert "rejected request target" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["no-such-revision"], "cannot read 'no-such-revision'", id="unknown revision"),
        pytest.param(["HEAD", "HEAD"], "A and B are both 'HEAD'", id="the same twice"),
    ],
)
def test_adapters_refuse_what_they_cannot_compare(args: list[str], message: str) -> None:
    done = run_adapters(*args, "--rounds", "1", "--part", "time")
    assert done.returncode == 1
    assert message in done.stderr


@pytest.mark.timing
def test_adapters_instruction_counts() -> None:
    require_tool("valgrind")
    done = run_adapters("HEAD", "--part", "instructions", "--requests", "5")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for app in ("starlette", "flask"):
        for target in ("plain", "encoded"):
            counts = {}
            for layer in ("bare", "guarded@HEAD", "guarded@WORKTREE"):
                found = row(out, app, target, layer)
                assert found is not None, (app, target, layer, out)
                counts[layer] = float(found.group(1).replace(",", ""))
            # Each guard does more than the bare app (it parses, at least).
            assert counts["bare"] < min(counts["guarded@HEAD"], counts["guarded@WORKTREE"]), out

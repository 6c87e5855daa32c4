"""Every code sample in README.md and docs/ runs here, as the page shows it.

The samples stay in the pages: Sybil reads each page and runs its blocks in
page order, in one namespace and one fresh working directory per page, as
a reader pastes a page top to bottom. Each block runs by its language:

- ``python``: run in the page's namespace; a block that starts with ``>>>``
  is a doctest. A block whose first line names a file of a project
  (``# mysite/wsgi.py``) is that file: it is compiled here, and the Django
  page's project is served below.
- ``toml``: a urlguard configuration, read with ``load_config``; one whose
  first line names its file (``# urlguard.toml``) is written there.
- ``text`` with a title (``text title="access.log"``, shown above the block
  on the site): a file the page's commands read, written there.
- ``console``: each ``$ urlguard`` line runs the command line and prints the
  text shown under it; each ``$ curl`` line is sent below, byte for byte over
  a raw socket (a client would normalise the target), to the page's
  application behind a real server on loopback.
- ``sh``: each command is checked against what it names (an extra in
  ``pyproject.toml``, a file, an importable application, arguments the
  command line accepts), runs when it is a ``python -c`` line, and a
  framework page's start command is the one that serves its quick start.
- ``apache``: a ``LogFormat`` line; a line written in that format is one
  ``urlguard audit`` reads in the format the directive names.
- ``promql``: each metric and label the query selects is one the Prometheus
  integration exposes.
- A fence without a language, or ``text`` without a title, is a figure.

Sybil's own markers, in HTML comments the site does not render, say how
to run what cannot run alone: ``<!-- invisible-code-block: python ... -->``
is code run before the next block (an ``app`` for a middleware sample to
wrap), ``<!-- skip: next "REASON" -->`` shows a block without running it.

A framework page's quick start is its ``python`` code above the first
section heading, saved as ``app.py`` (the page says so) and started with the
page's own ``sh`` command; the Django page's is its project. The ``servers``
marker: real processes on loopback.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
import unittest
import venv
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

import tour
import urlguard
from doc_pages import FENCES, PAGES, PROJECT_FILE, ROOT, Block, commands, page_blocks
from fresh_installs import copy_source, user_env
from rawhttp import free_port, request, running
from suggest_helpers import REALISTIC, write_log
from urlguard.cli import commands as cli
from urlguard.cli.audit import HOST_FORMATS

#: The pages whose quick start is served; Django's is a project of files.
FRAMEWORKS = [f"docs/frameworks/{name}.md" for name in ("starlette", "fastapi", "flask")]
DJANGO = "docs/frameworks/django.md"
#: Pages whose ``curl`` lines ask the README's Starlette quick start: the
#: README, and getting-started, whose 400s any guarded application answers.
README_SERVED = ["README.md", "docs/getting-started.md"]
SERVED_PAGES = [*FRAMEWORKS, DJANGO, *README_SERVED]
#: The base URL every documented ``curl`` line uses.
BASE = "http://127.0.0.1:8000"
CONTROL_SOCKET = ["--no-control-socket"] if tour.gunicorn_has_control_socket() else []
BLOCKS = {page: page_blocks(page) for page in PAGES}


def blocks(language: str | None = None) -> Iterator[Block]:
    for page in PAGES:
        for block in BLOCKS[page]:
            if language is None or block.language == language:
                yield block


# --- python ------------------------------------------------------------------------------------


def compile_project_file(example: Example) -> None:
    """A file of a project is compiled here; the project is served below."""
    compile(example.parsed, example.path, "exec")


class PythonBlocks:
    """Sybil's Python parser (code and doctests in the page's namespace), but
    for the files of a project, which do not run in the page's process."""

    def __init__(self) -> None:
        self.python = PythonCodeBlockParser()

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.python(document):
            if isinstance(region.parsed, str) and PROJECT_FILE.match(region.parsed):
                region.evaluator = compile_project_file
            yield region


# --- files: toml and titled text ---------------------------------------------------------------

TOML_FILE = re.compile(r"^# (?P<name>[\w.-]+\.toml)$", re.MULTILINE)


def toml_is_a_configuration(example: Example) -> None:
    """A configuration urlguard reads; written to the file its first line names."""
    code: str = example.parsed
    if (named := TOML_FILE.match(code)) is not None:
        Path(named["name"]).write_text(code, encoding="utf-8")
    path = Path("shown-configuration.toml")
    path.write_text(code, encoding="utf-8")
    assert isinstance(urlguard.load_config(path), urlguard.Config)
    path.unlink()


def write_shown_file(example: Example) -> None:
    title, code = example.parsed
    assert re.fullmatch(r"[\w.-]+", title), title
    Path(title).write_text(code, encoding="utf-8")


def titled_text_blocks(document: Document) -> Iterable[Region]:
    """``text`` blocks with a title: the files the page's commands read."""
    for region in FENCES(document):
        if region.lexemes["language"] == "text" and region.lexemes["title"] is not None:
            region.parsed = (region.lexemes["title"], str(region.lexemes["source"]))
            region.evaluator = write_shown_file
            yield region


# --- apache ------------------------------------------------------------------------------------

#: What each directive of an access log ``LogFormat`` writes for one request;
#: ``%v``, ``%p`` and ``%r`` come from the request.
LOGGED = {
    "%h": "192.0.2.7",
    "%l": "-",
    "%u": "-",
    "%t": "[10/Oct/2024:13:55:36 +0000]",
    "%>s": "200",
    "%O": "512",
    "%{Referer}i": "-",
    "%{User-Agent}i": "Mozilla/5.0",
}
DIRECTIVE = re.compile(r"%[<>]?(?:\{[^}]*\})?[A-Za-z]")


def logged(layout: str, host: str, port: str, target: str) -> str:
    """The line a ``LogFormat`` layout writes for a GET of ``target`` on ``host:port``."""
    values = {**LOGGED, "%v": host, "%p": port, "%r": f"GET {target} HTTP/1.1"}
    return DIRECTIVE.sub(lambda found: values[found[0]], layout)


def command_line(argv: list[str]) -> tuple[int, str, str]:
    """The ``urlguard`` command line run in this process: its code, output and errors."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def log_format_is_the_one_audit_reads(example: Example) -> None:
    """Lines Apache writes in the block's format are read in the format it names,
    with the host judged where that format has one."""
    directive, layout, name = shlex.split(example.parsed)  # Apache unescapes \" as shlex does
    assert directive == "LogFormat"
    names_host = name in HOST_FORMATS
    sent = [("example.com", "443", "/files/a%2Fb"), ("0x7f.1", "80", "/")]
    lines = [logged(layout, host, port, target) for host, port, target in sent]
    Path("apache.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, _ = command_line(["audit", "--json", "apache.log"])
    assert code == 1
    report = json.loads(out)
    assert report["formats"] == [name]
    assert report["parsed"] == len(sent)
    assert report["hosts_checked"] is names_host
    expected = {"encoded-slash": 1, "bad-host": 1} if names_host else {"encoded-slash": 1}
    assert report["rules"] == expected


# --- promql ------------------------------------------------------------------------------------

SELECTOR = re.compile(r"\b(?P<metric>urlguard_\w+)(?:\{(?P<matchers>[^}]*)\})?")
MATCHER = re.compile(r'(?P<label>\w+)\s*(?P<op>=~|!=|!~|=)\s*"(?P<value>[^"]*)"')
BY = re.compile(r"\b(?:by|without)\s*\((?P<labels>[^)]*)\)")


def start_response(
    status: str, headers: list[tuple[str, str]], exc_info: Any = None, /
) -> Callable[[bytes], object]:
    def write(data: bytes) -> None:
        raise AssertionError("the application writes nothing through write()")

    return write


def plain_wsgi_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


def exposition() -> dict[str, list[dict[str, str]]]:
    """The samples the Prometheus collector exposes (metric: label sets) for a
    middleware in report mode that saw a target pass and one break a rule."""
    from prometheus_client import CollectorRegistry

    from urlguard.integrations.prometheus import GuardCollector
    from urlguard.wsgi import StrictURLMiddleware

    guard = StrictURLMiddleware(plain_wsgi_app, mode="report")
    for target in ["/files/a", "/files/a%2Fb"]:
        environ = {
            "REQUEST_METHOD": "GET",
            "SCRIPT_NAME": "",
            "PATH_INFO": target,
            "QUERY_STRING": "",
            "RAW_URI": target,
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "example.com",
            "wsgi.url_scheme": "http",
        }
        b"".join(guard(environ, start_response))
    registry = CollectorRegistry()
    registry.register(GuardCollector(guard))
    samples: dict[str, list[dict[str, str]]] = defaultdict(list)
    for family in registry.collect():
        for sample in family.samples:
            samples[sample.name].append(sample.labels)
    return samples


def queries_select_what_the_integration_exposes(example: Example) -> None:
    code: str = example.parsed
    samples = exposition()
    selected = list(SELECTOR.finditer(code))
    assert selected
    labels: set[str] = set()
    for selector in selected:
        metric = selector["metric"]
        assert metric in samples, metric
        labels |= {label for series in samples[metric] for label in series}
        for matcher in MATCHER.finditer(selector["matchers"] or ""):
            label, value = matcher["label"], matcher["value"]
            values = {series.get(label) for series in samples[metric]}
            assert values - {None}, f"{metric} has no label {label!r}"
            if matcher["op"] == "=":
                assert value in values, f"{label}={value!r}"
    for grouping in BY.finditer(code):
        grouped = {label.strip() for label in grouping["labels"].split(",")}
        assert grouped <= labels, grouped - labels


# --- sh ----------------------------------------------------------------------------------------

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
PIP_OPTIONS = {"-e", "--quiet", "--force-reinstall", "--no-deps", "--no-cache-dir"}
SERVERS = {"uvicorn", "gunicorn"}
#: Tools a page installs beside urlguard, and the file in the project that configures each.
TOOLS = {"tox": "tox.ini"}


def start_commands(page: str) -> list[list[str]]:
    return [
        words
        for block in BLOCKS[page]
        if block.language == "sh"
        for words in commands(block.code)
        if words[0] in SERVERS
    ]


def check_pip(args: list[str]) -> None:
    assert args[0] == "install", args
    specs = [arg for arg in args[1:] if arg not in PIP_OPTIONS]
    assert specs, args
    for spec in specs:
        if spec in TOOLS:
            assert (ROOT / TOOLS[spec]).is_file(), spec
            continue
        found = re.fullmatch(r"\.(?:\[(?P<extras>[\w,-]+)\])?", spec)
        assert found is not None, f"pip installs {spec!r}, not this project"
        assert set((found["extras"] or "").split(",")) - {""} <= EXTRAS, spec


def check_importable(args: list[str]) -> None:
    """``module:attribute`` of a server command imports from the directory it names."""
    options = dict(zip(args[:-1:2], args[1::2], strict=True))
    directory = options.get("--chdir") or options.get("--app-dir") or "."
    module, _, attribute = args[-1].partition(":")
    probe = f"import importlib; getattr(importlib.import_module({module!r}), {attribute!r})"
    ran = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT / directory,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr


def check_command(page: str, words: list[str]) -> None:
    program, *args = words
    if program == "pip":
        check_pip(args)
    elif program in {"python", "python3"} and args[:2] == ["-m", "venv"]:
        assert len(args) == 3, words
    elif program in {"python", "python3"} and args[:1] == ["-c"]:
        ran = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True)
        assert ran.stdout == f"{urlguard.IMPLEMENTATION}\n"
    elif program in {"python", "python3"}:
        [script] = args
        assert (ROOT / script).is_file(), words
    elif program == "tox":
        assert args == ["run-parallel"]
        assert (ROOT / "tox.ini").is_file()
    elif program in SERVERS and page in [*FRAMEWORKS, DJANGO]:
        assert words in start_commands(page)  # test_quick_start_behind_a_server runs it
    elif program in SERVERS:
        check_importable(args)
    elif program == "urlguard":
        cli._parser().parse_args(args)
    else:
        pytest.fail(f"no check for {program!r}")


def shell_commands_are_what_they_name(example: Example) -> None:
    found = list(commands(example.parsed))
    assert found
    page = str(Path(example.path).relative_to(ROOT))
    for words in found:
        check_command(page, words)


# --- console -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """One ``$ command`` line of a console block and the output printed under it."""

    where: str
    words: list[str]
    output: str


def shown_lines(page: str, line: int, code: str) -> list[Shown]:
    """The ``$`` lines of the console block at ``page:line``."""
    lines = code.splitlines()
    starts = [i for i, text in enumerate(lines) if text.startswith("$ ")]
    assert starts[:1] == [0], f"{page}:{line}: a console block starts with '$ '"
    return [
        Shown(f"{page}:{line + 1 + i}", shlex.split(lines[i][2:]), "\n".join(lines[i + 1 : end]))
        for i, end in zip(starts, [*starts[1:], len(lines)], strict=True)
    ]


def console_lines_print_what_is_shown(example: Example) -> None:
    """``$ urlguard`` lines run here; ``$ curl`` lines ask a served page's
    application (test_quick_start_behind_a_server)."""
    page = str(Path(example.path).relative_to(ROOT))
    for line in shown_lines(page, example.line, example.parsed):
        if line.words[0] == "curl":
            assert page in SERVED_PAGES, f"{line.where}: no server for this page"
            continue
        assert line.words[0] == "urlguard", f"{line.where}: {line.words[0]}"
        _, out, err = command_line(line.words[1:])
        assert err == "", line.where
        assert out == line.output + "\n", line.where


SAMPLES = Sybil(
    parsers=[
        PythonBlocks(),
        SkipParser(),
        CodeBlockParser("toml", toml_is_a_configuration),
        titled_text_blocks,
        CodeBlockParser("console", console_lines_print_what_is_shown),
        CodeBlockParser("sh", shell_commands_are_what_they_name),
        CodeBlockParser("apache", log_format_is_the_one_audit_reads),
        CodeBlockParser("promql", queries_select_what_the_integration_exposes),
    ],
    path=str(ROOT),
)
#: The languages Sybil runs; a fence without a language is a figure.
LANGUAGES = {"python", "toml", "text", "console", "sh", "apache", "promql", ""}


@pytest.fixture
def django_settings() -> Iterator[None]:
    """Django configured in this process (the example project's settings), and
    the environment put back after a sample sets ``DJANGO_SETTINGS_MODULE``."""
    import django_app  # noqa: F401  (configures the settings)

    before = os.environ.get("DJANGO_SETTINGS_MODULE")
    yield
    if before is None:
        os.environ.pop("DJANGO_SETTINGS_MODULE", None)
    else:
        os.environ["DJANGO_SETTINGS_MODULE"] = before


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh process-wide Prometheus registry, as a new process has: a
    sample registers its collector there, once per process."""
    import prometheus_client

    monkeypatch.setattr(prometheus_client, "REGISTRY", prometheus_client.CollectorRegistry())


#: Files the ``$ urlguard`` lines of a page read, where the page does not show them.
FILES: dict[str, Callable[[Path], object]] = {
    "docs/suggest.md": lambda directory: write_log(directory / "access.log", REALISTIC),
}


@pytest.mark.parametrize("page", [page for page in PAGES if list(SAMPLES.parse(ROOT / page))])
def test_samples_run_in_page_order(
    page: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    django_settings: None,
    fresh_registry: None,
) -> None:
    monkeypatch.chdir(tmp_path)
    if page in FILES:
        FILES[page](tmp_path)
    document = SAMPLES.parse(ROOT / page)
    document.namespace["__name__"] = f"docs_{Path(page).stem}"
    for example in document:
        with contextlib.suppress(unittest.SkipTest):  # <!-- skip: next "REASON" -->
            example.evaluate()


def test_every_block_is_run_or_is_a_figure() -> None:
    """Every fence Sybil runs is one the page shows, and every other fence is
    a figure: no sample goes unrun for a language nothing reads."""
    assert sum(len(found) for found in BLOCKS.values()) > 40
    for page in PAGES:
        run = [example.line for example in SAMPLES.parse(ROOT / page)]
        for block in BLOCKS[page]:
            assert block.language in LANGUAGES, f"{block.where}: no runner for {block.language!r}"
            figure = block.language == "" or (block.language == "text" and block.title is None)
            inside = range(block.line, block.line + block.code.count("\n") + 3)  # fences too
            assert any(line in inside for line in run) is not figure, block.where


# --- the quick starts behind real servers ------------------------------------------------------


def curl_lines(page: str) -> list[Shown]:
    return [
        line
        for block in BLOCKS[page]
        if block.language == "console" and not block.skipped
        for line in shown_lines(page, block.line, block.code)
        if line.words[0] == "curl"
    ]


def check_curl(port: int, line: Shown, as_json: bool = False) -> None:
    """Send the line's target as curl --path-as-is sends it; the body is the text
    shown (``as_json``: a JSON answer is the same JSON value, spelt as its
    framework spells it)."""
    words = line.words[1:]
    assert "--path-as-is" in words, f"{line.where}: curl would resolve dot segments"
    url = words[-1]
    assert url.startswith(BASE + "/"), line.where
    headers: list[tuple[bytes, bytes]] = []
    for flag, value in itertools.pairwise(words):
        if flag == "-H":
            name, _, content = value.partition(": ")
            headers.append((name.encode(), content.encode()))
    answer = request(port, url.removeprefix(BASE).encode(), headers=headers)
    kind = answer.header(b"content-type") or b""
    refused = answer.text.startswith("400 Bad Request: ") or kind == b"application/problem+json"
    assert answer.status == (400 if refused else 200), f"{line.where}: {answer.status}"
    if as_json and kind == b"application/json":
        assert json.loads(answer.text) == json.loads(line.output), line.where
    else:
        assert answer.text.removesuffix("\n") == line.output, line.where


def server_argv(words: list[str], port: int, python: str = sys.executable) -> list[str]:
    program, *args = words
    if program == "uvicorn":
        args += ["--host", "127.0.0.1", "--port", str(port)]
    else:
        args += ["--bind", f"127.0.0.1:{port}", *CONTROL_SOCKET]
    return [python, "-m", program, *args]


def quick_start(page: str) -> str:
    """The page's Python above its first section heading."""
    code = [b.code for b in BLOCKS[page] if b.language == "python" and b.level <= 1]
    assert code, page
    return "\n\n\n".join(code) + "\n"


def django_project(
    directory: Path,
    python: str = sys.executable,
    leave_out: frozenset[str] = frozenset(),
    page: str = DJANGO,
) -> None:
    """``django-admin startproject mysite``, then the files ``page`` shows written
    into it (blocks of one file join in page order), but for those under a
    heading in ``leave_out``."""
    subprocess.run(
        [python, "-m", "django", "startproject", "mysite", str(directory)],
        check=True,
        capture_output=True,
    )
    files: dict[str, list[str]] = defaultdict(list)
    for block in BLOCKS[page]:
        if block.heading in leave_out or block.language != "python" or block.skipped:
            continue
        if page == DJANGO or block.heading == "Django":
            path = block.project_file
            assert path is not None, f"{block.where}: a Django block names its file"
            files[path].append(block.code)
    assert {"mysite/wsgi.py", "mysite/urls.py", "mysite/views.py"} <= set(files)
    if page == DJANGO:
        assert "mysite/asgi.py" in files
    for path, code in files.items():
        (directory / path).write_text("\n\n\n".join(code) + "\n", encoding="utf-8")


def readme_starlette(directory: Path) -> None:
    [code] = [
        b.code for b in BLOCKS["README.md"] if b.language == "python" and b.heading == "Starlette"
    ]
    (directory / "app.py").write_text(code + "\n", encoding="utf-8")


def write_quick_start(
    page: str,
    directory: Path,
    python: str = sys.executable,
    leave_out: frozenset[str] = frozenset(),
) -> list[list[str]]:
    """Write ``page``'s quick start into ``directory``; the commands that start it."""
    if page == DJANGO:
        django_project(directory, python, leave_out)
        starts = start_commands(page)
    elif page in FRAMEWORKS:
        (directory / "app.py").write_text(quick_start(page), encoding="utf-8")
        starts = start_commands(page)
    else:
        readme_starlette(directory)
        starts = [["uvicorn", "app:app"]]
    assert starts, f"{page} shows how to start its quick start"
    return starts


def answers_as_shown(
    page: str,
    starts: list[list[str]],
    directory: Path,
    python: str = sys.executable,
    env: dict[str, str] | None = None,
) -> None:
    """Under each of ``starts``, every ``curl`` line of ``page`` gets the answer shown."""
    for words in starts:
        port = free_port()
        with running(server_argv(words, port, python), port, cwd=directory, env=env) as server:
            for line in curl_lines(page):
                try:
                    check_curl(port, line)
                except AssertionError as error:
                    raise AssertionError(f"{' '.join(words)}: {server.output()}") from error


@pytest.mark.servers
@pytest.mark.parametrize("page", [pytest.param(page, id=page) for page in SERVED_PAGES])
def test_quick_start_behind_a_server(page: str, tmp_path: Path) -> None:
    lines = curl_lines(page)
    if page in FRAMEWORKS or page == DJANGO:
        # A quick start shows what it does: a target answered and one refused.
        assert any(line.output.startswith("{") for line in lines), page
        assert any(line.output.startswith("400 ") for line in lines), page
    assert lines, page
    starts = write_quick_start(page, tmp_path)
    answers_as_shown(page, starts, tmp_path, env={"PYTHONPATH": str(tmp_path)})


@pytest.mark.servers
def test_readme_django_project_behind_a_server(tmp_path: Path) -> None:
    """The README's Django files, each the file it names, in a new project
    under gunicorn: the README's ``curl`` lines get the answers it shows
    (its JSON as Django spells it)."""
    django_project(tmp_path, page="README.md")
    port = free_port()
    with running(server_argv(["gunicorn", "mysite.wsgi"], port), port, cwd=tmp_path) as server:
        for line in curl_lines("README.md"):
            try:
                check_curl(port, line, as_json=True)
            except AssertionError as error:
                raise AssertionError(server.output()) from error


# --- quick starts from fresh virtualenvs ---------------------------------------------------
#
# The quick starts above run in the suite's own environment, which has every
# extra. A reader's has only what the page's install line installs: each
# quick start is served again from a virtualenv made with that line alone, run
# as the page shows it in a copy of the source tree (a clone). Slow (a build
# of urlguard and its framework's packages per line), so marked ``install``:
# ``tox -e install`` runs them.

#: The heading of each served page's install line (the first ``pip install``
#: under it; ``None``: above the page's first section), and the sections whose
#: code needs more than that line installs (each says which extra it needs),
#: left out of the served project.
INSTALL_HEADING: dict[str, str | None] = {
    "README.md": "Install",
    **dict.fromkeys([*FRAMEWORKS, DJANGO]),
}
NEEDS_MORE = frozenset({"Metrics"})


def install_line(page: str) -> list[str]:
    """The page's first ``pip install`` command under its install heading."""
    heading = INSTALL_HEADING[page]
    for block in BLOCKS[page]:
        above = block.heading == heading if heading is not None else block.level <= 1
        if block.language == "sh" and above:
            for words in commands(block.code):
                if words[:2] == ["pip", "install"]:
                    return words
    raise AssertionError(f"{page}: no pip install line under {heading!r}")


def _venv_with(words: list[str], at: Path) -> str:
    """A fresh virtualenv at ``at``, with ``words`` (``pip install ...``) run by
    its own pip from a copy of the source tree."""
    tree = copy_source(at / "clone")
    venv.create(at / "venv", with_pip=True)
    python = str(at / "venv" / "bin" / "python")
    done = subprocess.run(
        [python, "-m", *words],
        cwd=tree,
        env=user_env(PIP_DISABLE_PIP_VERSION_CHECK="1"),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{' '.join(words)}:\n{(done.stdout + done.stderr)[-4000:]}"
    return python


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], str]:
    """install line -> the python of a virtualenv made with it alone; two
    installs at a time (a page's line is often another's)."""
    lines = {tuple(install_line(page)) for page in INSTALL_HEADING}
    with ThreadPoolExecutor(max_workers=2) as pool:
        pythons = {
            line: pool.submit(_venv_with, list(line), tmp_path_factory.mktemp("venv"))
            for line in sorted(lines)
        }
        return {line: future.result() for line, future in pythons.items()}


@pytest.mark.install
@pytest.mark.servers
@pytest.mark.parametrize("page", [pytest.param(page, id=page) for page in INSTALL_HEADING])
def test_quick_start_runs_with_what_its_page_installs(
    page: str, tmp_path: Path, installed: dict[tuple[str, ...], str]
) -> None:
    words = install_line(page)
    # From a clone, with an extra: what the page tells a reader to run.
    assert words[2:], words
    assert all(re.fullmatch(r"\.\[[\w,]+\]", spec) for spec in words[2:]), words
    python = installed[tuple(words)]
    starts = write_quick_start(page, tmp_path, python, leave_out=NEEDS_MORE)
    answers_as_shown(page, starts, tmp_path, python)


def test_ci_runs_the_readmes_test_command() -> None:
    """CI runs the README's test command as the README gives it, and nothing
    else: a green CI means the newcomer's command passes."""
    [set_up] = [
        b for b in BLOCKS["README.md"] if b.language == "sh" and b.heading.startswith("Set-up")
    ]
    test_command = set_up.code.splitlines()[1]
    assert "tox" in test_command
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    run = [line for line in script if line.strip() and not line.lstrip().startswith("#")]
    assert run[-1] == test_command
    assert not any("pytest" in line or "tox" in line for line in run[:-1]), run

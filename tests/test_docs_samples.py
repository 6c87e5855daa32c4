"""Every code sample in README.md and docs/ runs here, as the page shows it.

The samples stay in the pages, and this module extracts every fenced block
from them. Moving them into files included with ``pymdownx.snippets`` would
also work for the site, but the README and the pages on GitHub would then show
an include line instead of the code, and each sample would live apart from the
prose that explains it. Extraction keeps the Markdown the single source: a
page is tested exactly as a reader copies it.

Each block runs by its language:

- ``python`` blocks that start with ``>>>`` run as doctests, each on its own.
- Other ``python`` blocks run in page order in one namespace, as a reader
  pastes a page top to bottom, with a fresh process-wide Prometheus
  registry, as a new process has. A block whose first line names a file of a
  project (``# mysite/wsgi.py``) is that file instead: the Django page's
  blocks are written into a project made by ``django-admin startproject``.
- ``toml`` blocks are urlguard configurations, read with ``load_config``.
  One whose first line names its file (``# urlguard.toml``) is that file.
- ``text`` blocks are files a page's commands read, each named by its
  marker (``<!-- sample: file access.log -->``).
- Files a page shows (its named ``toml`` and ``text`` blocks) are written
  into the working directory its ``python`` blocks and ``$ urlguard``
  lines run in, a fresh one for each page.
- ``console`` blocks: each ``$ curl`` line is sent, byte for byte over a raw
  socket (a client would normalise the target), to the page's application
  behind a real server on loopback, and each ``$ urlguard`` line runs the
  command line; the answer must be the text the page prints under it.
- ``sh`` blocks name commands: each is checked against what it names (an
  extra in ``pyproject.toml``, a file, an importable application, arguments
  the command line accepts), runs when it is a ``python -c`` line, and a
  framework page's start command is the one that serves its quick start.
- ``apache`` blocks are ``LogFormat`` lines: a line written in the format
  is one ``urlguard audit`` reads in the format the directive names.
- ``promql`` blocks are queries: each metric and label they select is one
  the Prometheus integration exposes.
- A fence without a language is a figure (a diagram, a usage synopsis).

An HTML comment on the line above a fence, which the site does not render,
says how to run a block that cannot run on its own:
``<!-- sample: given an ASGI app -->`` (also ``a WSGI app``, ``a Starlette
app``, ``a Flask app``) binds ``app`` to a fresh application of that kind
first, ``<!-- sample: file NAME -->`` names the file a ``text`` block is, and
``<!-- sample: not run: REASON -->`` leaves a block out, with its reason.

A framework page's quick start is its ``python`` code above the first
section heading, saved as ``app.py`` (the page says so) and started with the
page's own ``sh`` command; the Django page's is its project. The ``servers``
marker: real processes on loopback.
"""

from __future__ import annotations

import doctest
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import venv
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import tour
import urlguard
from rawhttp import free_port, request, running
from urlguard.cli import commands as cli
from urlguard.cli.audit import HOST_FORMATS

ROOT = Path(__file__).resolve().parent.parent
#: Every page a reader copies code from.
PAGES = [
    "README.md",
    *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").rglob("*.md")),
]
#: The pages whose quick start is served; Django's is a project of files.
FRAMEWORKS = [f"docs/frameworks/{name}.md" for name in ("starlette", "fastapi", "flask")]
DJANGO = "docs/frameworks/django.md"
#: Pages whose ``curl`` lines ask the README's Starlette quick start: the
#: README, and getting-started, whose 400s any guarded application answers.
README_SERVED = ["README.md", "docs/getting-started.md"]
#: The base URL every documented ``curl`` line uses.
BASE = "http://127.0.0.1:8000"
CONTROL_SOCKET = ["--no-control-socket"] if tour.gunicorn_has_control_socket() else []


# --- the blocks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One fenced block of a page, its code dedented to the fence's column."""

    page: str
    line: int  # of the opening fence, from 1
    language: str
    code: str
    heading: str  # the text of the nearest heading above it
    level: int  # that heading's level (0: none)
    marker: str | None  # what ``<!-- sample: ... -->`` on the line above says

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


FENCE = re.compile(r"^(?P<indent> *)```(?P<language>[\w-]*)\s*$")
MARKER = re.compile(r"^\s*<!-- sample: (?P<what>.+?) -->\s*$")
HEADING = re.compile(r"^(?P<hashes>#+) (?P<text>.*)$")


def fenced_blocks(page: str) -> list[Block]:
    """Every fenced block of ``page`` (a path from the project root), in order,
    indented ones (inside tabs and admonitions) included."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    heading, level = "", 0
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            if (found := HEADING.match(lines[i])) is not None:
                heading, level = found["text"].strip(), len(found["hashes"])
            i += 1
            continue
        indent = fence["indent"]
        above = MARKER.match(lines[i - 1]) if i > 0 else None
        end = i + 1
        while lines[end].rstrip() != indent + "```":
            end += 1
        code = "\n".join(line.removeprefix(indent) for line in lines[i + 1 : end])
        marker = above["what"] if above is not None else None
        blocks.append(Block(page, i + 1, fence["language"], code, heading, level, marker))
        i = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in fenced_blocks(page)]


def given_asgi() -> Any:
    from starlette.applications import Starlette

    return Starlette()


def given_wsgi() -> Any:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    return app


def given_flask() -> Any:
    from flask import Flask

    return Flask(__name__)


#: What ``<!-- sample: given ... -->`` binds ``app`` to.
GIVEN: dict[str, Callable[[], Any]] = {
    "an ASGI app": given_asgi,
    "a Starlette app": given_asgi,
    "a WSGI app": given_wsgi,
    "a Flask app": given_flask,
}
PROJECT_FILE = re.compile(r"^# (?P<path>\w+(?:/\w+)+\.py)\b")
TOML_FILE = re.compile(r"^# (?P<name>[\w.-]+\.toml)$", re.MULTILINE)
LANGUAGES = {"python", "toml", "console", "sh", "text", "apache", "promql", ""}


def is_doctest(block: Block) -> bool:
    return block.language == "python" and block.code.lstrip().startswith(">>>")


def project_file(block: Block) -> str | None:
    found = PROJECT_FILE.match(block.code)
    return found["path"] if found is not None else None


def runs(block: Block) -> bool:
    return block.marker is None or not block.marker.startswith("not run:")


def shown_file(block: Block) -> str | None:
    """The name of the file ``block`` is, if it is one: a ``text`` block named
    by its marker, or a ``toml`` block whose first line names it."""
    if block.language == "text" and block.marker is not None:
        name = block.marker.removeprefix("file ")
        return name if name != block.marker else None
    if block.language == "toml" and (found := TOML_FILE.match(block.code)) is not None:
        return found["name"]
    return None


def page_files(page: str, directory: Path) -> None:
    """Write the files ``page`` shows into ``directory``."""
    for block in BLOCKS:
        if block.page == page and runs(block) and (name := shown_file(block)) is not None:
            (directory / name).write_text(block.code + "\n", encoding="utf-8")


def ids(blocks: list[Block]) -> list[Any]:
    return [pytest.param(block, id=block.where) for block in blocks]


def test_every_block_is_run_or_says_why_not() -> None:
    assert len(BLOCKS) > 40
    for block in BLOCKS:
        assert block.language in LANGUAGES, f"{block.where}: no runner for {block.language!r}"
        if block.language == "text" and runs(block):
            assert block.marker is not None, f"{block.where}: a text block names its file"
        if block.marker is None:
            continue
        if block.marker.startswith("not run:"):
            assert block.marker.removeprefix("not run:").strip(), f"{block.where}: no reason"
        elif block.marker.startswith("file "):
            assert block.language == "text", block.where
            assert re.fullmatch(r"[\w.-]+", block.marker.removeprefix("file ")), block.where
        else:
            assert block.marker.removeprefix("given ") in GIVEN, f"{block.where}: {block.marker}"
            assert block.language == "python", block.where


def test_the_block_reader_finds_indented_fences_and_markers() -> None:
    tabs = [b for b in fenced_blocks("docs/getting-started.md") if b.marker is not None]
    assert [(b.marker, b.code.splitlines()[0]) for b in tabs] == [
        ("given an ASGI app", "from urlguard.asgi import StrictURLMiddleware"),
        ("given a WSGI app", "from urlguard.wsgi import StrictURLMiddleware"),
    ]


# --- python ------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", ids([b for b in BLOCKS if is_doctest(b)]))
def test_doctest(block: Block) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.code, {}, block.where, block.page, block.line)
    assert test.examples
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def in_process(page: str) -> list[Block]:
    return [
        b
        for b in BLOCKS
        if b.page == page
        and b.language == "python"
        and runs(b)
        and not is_doctest(b)
        and project_file(b) is None
    ]


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


@pytest.mark.parametrize("page", [page for page in PAGES if in_process(page)])
def test_python_blocks_run_in_page_order(
    page: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    django_settings: None,
    fresh_registry: None,
) -> None:
    monkeypatch.chdir(tmp_path)
    page_files(page, tmp_path)
    namespace: dict[str, Any] = {"__name__": f"docs_{Path(page).stem}"}
    for block in in_process(page):
        if block.marker is not None:
            namespace["app"] = GIVEN[block.marker.removeprefix("given ")]()
        code = compile(block.code, block.where, "exec")
        exec(code, namespace)  # the page's own code, as a reader pastes it


# --- toml --------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", ids([b for b in BLOCKS if b.language == "toml" and runs(b)]))
def test_toml_is_a_configuration(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "urlguard.toml"
    path.write_text(block.code + "\n", encoding="utf-8")
    assert isinstance(urlguard.load_config(path), urlguard.Config), block.where


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


@pytest.mark.parametrize("block", ids([b for b in BLOCKS if b.language == "apache" and runs(b)]))
def test_log_format_is_the_one_audit_reads(
    block: Block, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lines Apache writes in the block's format are read in the format it names,
    with the host judged where that format has one."""
    directive, layout, name = shlex.split(block.code)  # Apache unescapes \" as shlex does
    assert directive == "LogFormat", block.where
    names_host = name in HOST_FORMATS
    sent = [("example.com", "443", "/files/a%2Fb"), ("0x7f.1", "80", "/")]
    lines = [logged(layout, host, port, target) for host, port, target in sent]
    log = tmp_path / "access.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli.main(["audit", "--json", str(log)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["formats"] == [name], block.where
    assert report["parsed"] == len(sent), block.where
    assert report["hosts_checked"] is names_host, block.where
    expected = {"encoded-slash": 1, "bad-host": 1} if names_host else {"encoded-slash": 1}
    assert report["rules"] == expected, block.where


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


def exposition() -> dict[str, list[dict[str, str]]]:
    """The samples the Prometheus collector exposes (metric: label sets) for a
    middleware in report mode that saw a target pass and one break a rule."""
    from prometheus_client import CollectorRegistry

    from urlguard.integrations.prometheus import GuardCollector
    from urlguard.wsgi import StrictURLMiddleware

    guard = StrictURLMiddleware(given_wsgi(), mode="report")
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


@pytest.mark.parametrize("block", ids([b for b in BLOCKS if b.language == "promql" and runs(b)]))
def test_queries_select_what_the_integration_exposes(block: Block) -> None:
    samples = exposition()
    selected = list(SELECTOR.finditer(block.code))
    assert selected, block.where
    labels: set[str] = set()
    for selector in selected:
        metric = selector["metric"]
        assert metric in samples, f"{block.where}: {metric}"
        labels |= {label for series in samples[metric] for label in series}
        for matcher in MATCHER.finditer(selector["matchers"] or ""):
            label, value = matcher["label"], matcher["value"]
            values = {series.get(label) for series in samples[metric]}
            assert values - {None}, f"{block.where}: {metric} has no label {label!r}"
            if matcher["op"] == "=":
                assert value in values, f"{block.where}: {label}={value!r}"
    for grouping in BY.finditer(block.code):
        grouped = {label.strip() for label in grouping["labels"].split(",")}
        assert grouped <= labels, f"{block.where}: {grouped - labels}"


# --- sh ----------------------------------------------------------------------------------------

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
PIP_OPTIONS = {"-e", "--quiet", "--force-reinstall", "--no-deps", "--no-cache-dir"}
SERVERS = {"uvicorn", "gunicorn"}
#: Tools a page installs beside urlguard, and the file in the project that configures each.
TOOLS = {"tox": "tox.ini"}


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


def start_commands(page: str) -> list[list[str]]:
    return [
        words
        for block in BLOCKS
        if block.page == page and block.language == "sh"
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


def check_command(block: Block, words: list[str]) -> None:
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
    elif program in SERVERS and block.page in [*FRAMEWORKS, DJANGO]:
        assert words in start_commands(block.page)  # test_quick_start_behind_a_server runs it
    elif program in SERVERS:
        check_importable(args)
    elif program == "urlguard":
        cli._parser().parse_args(args)
    else:
        pytest.fail(f"{block.where}: no check for {program!r}")


@pytest.mark.parametrize("block", ids([b for b in BLOCKS if b.language == "sh" and runs(b)]))
def test_shell_commands(block: Block) -> None:
    found = list(commands(block.code))
    assert found, block.where
    for words in found:
        check_command(block, words)


# --- console -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """One ``$ command`` line of a console block and the output printed under it."""

    where: str
    words: list[str]
    output: str


def shown(page: str) -> list[Shown]:
    found: list[Shown] = []
    for block in BLOCKS:
        if block.page != page or block.language != "console" or not runs(block):
            continue
        lines = block.code.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        assert starts[:1] == [0], f"{block.where}: a console block starts with '$ '"
        for i, end in zip(starts, [*starts[1:], len(lines)], strict=True):
            where = f"{page}:{block.line + 1 + i}"
            found.append(Shown(where, shlex.split(lines[i][2:]), "\n".join(lines[i + 1 : end])))
    return found


def curl_lines(page: str) -> list[Shown]:
    return [line for line in shown(page) if line.words[0] == "curl"]


def test_every_console_line_is_run() -> None:
    for page in PAGES:
        for line in shown(page):
            assert line.words[0] in {"curl", "urlguard"}, f"{line.where}: {line.words[0]}"
            if line.words[0] == "curl":
                served = [*FRAMEWORKS, DJANGO, *README_SERVED]
                assert page in served, f"{line.where}: no server for this page"


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
    code = [b.code for b in BLOCKS if b.page == page and b.language == "python" and b.level <= 1]
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
    for block in BLOCKS:
        if block.heading in leave_out:
            continue
        if block.page != page or block.language != "python" or not runs(block):
            continue
        if page == DJANGO or block.heading == "Django":
            path = project_file(block)
            assert path is not None, f"{block.where}: a Django block names its file"
            files[path].append(block.code)
    assert {"mysite/wsgi.py", "mysite/urls.py", "mysite/views.py"} <= set(files)
    if page == DJANGO:
        assert "mysite/asgi.py" in files
    for path, code in files.items():
        (directory / path).write_text("\n\n\n".join(code) + "\n", encoding="utf-8")


def readme_starlette(directory: Path) -> None:
    [code] = [
        b.code
        for b in BLOCKS
        if b.page == "README.md" and b.language == "python" and b.heading == "Starlette"
    ]
    (directory / "app.py").write_text(code + "\n", encoding="utf-8")


SERVED = [
    *[pytest.param(page, id=page) for page in [*FRAMEWORKS, DJANGO]],
    *[pytest.param(page, id=page) for page in README_SERVED],
]


@pytest.mark.servers
@pytest.mark.parametrize("page", SERVED)
def test_quick_start_behind_a_server(page: str, tmp_path: Path) -> None:
    lines = curl_lines(page)
    if page in FRAMEWORKS or page == DJANGO:
        # A quick start shows what it does: a target answered and one refused.
        assert any(line.output.startswith("{") for line in lines), page
        assert any(line.output.startswith("400 ") for line in lines), page
    assert lines, page
    starts = write_quick_start(page, tmp_path)
    answers_as_shown(page, starts, tmp_path, env={"PYTHONPATH": str(tmp_path)})


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


#: Files the ``$ urlguard`` lines of a page read, where the page does not show them.
def suggest_files(directory: Path) -> None:
    from test_suggest import REALISTIC, write_log

    write_log(directory / "access.log", REALISTIC)


FILES: dict[str, Callable[[Path], None]] = {"docs/suggest.md": suggest_files}


@pytest.mark.parametrize(
    "page", [page for page in PAGES if any(s.words[0] == "urlguard" for s in shown(page))]
)
def test_command_lines_print_what_the_page_shows(
    page: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    page_files(page, tmp_path)
    if page in FILES:
        FILES[page](tmp_path)
    for line in shown(page):
        if line.words[0] != "urlguard":
            continue
        cli.main(line.words[1:])
        out, err = capsys.readouterr()
        assert err == "", line.where
        assert out == line.output + "\n", line.where


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
    for block in BLOCKS:
        above = block.heading == heading if heading is not None else block.level <= 1
        if block.page == page and block.language == "sh" and above:
            for words in commands(block.code):
                if words[:2] == ["pip", "install"]:
                    return words
    raise AssertionError(f"{page}: no pip install line under {heading!r}")


def _venv_with(words: list[str], at: Path) -> str:
    """A fresh virtualenv at ``at``, with ``words`` (``pip install ...``) run by
    its own pip from a copy of the source tree."""
    from test_install import NOT_SOURCE, _env

    tree = at / "clone"
    shutil.copytree(ROOT, tree, ignore=NOT_SOURCE)
    venv.create(at / "venv", with_pip=True)
    python = str(at / "venv" / "bin" / "python")
    done = subprocess.run(
        [python, "-m", *words],
        cwd=tree,
        env=_env(PIP_DISABLE_PIP_VERSION_CHECK="1"),
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
        b
        for b in BLOCKS
        if b.page == "README.md" and b.language == "sh" and b.heading.startswith("Set-up")
    ]
    test_command = set_up.code.splitlines()[1]
    assert "tox" in test_command
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    run = [line for line in script if line.strip() and not line.lstrip().startswith("#")]
    assert run[-1] == test_command
    assert not any("pytest" in line or "tox" in line for line in run[:-1]), run

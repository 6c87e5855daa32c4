"""A tour of urlguard: the same raw request targets, byte for byte, sent to two stacks.

    .venv/bin/python example_apps/tour.py

Starts the Starlette example (``starlette_app.py``) under uvicorn and the Flask
example (``flask_app.py``) under gunicorn, each on a free port of 127.0.0.1,
sends every example URL of the articles on URL encoding that urlguard follows
(``article_examples.py``, reduced to origin-form under ``/echo/``, or
``/files/`` where the article keeps ``%2F``) and a set of hostile targets over raw
sockets (HTTP clients would "fix" them first), prints what each stack
answered side by side. Then it starts the FastAPI example under uvicorn and
the Django example under gunicorn too, and shows the four frameworks routing
``/units/{unit:segment}``: ``kg%2Fs`` arrives as one segment, ``kg/s``; a
kept ``%2F`` that hides a dot segment never reaches a handler. It stops
every server and exits 0.

Each answer is one of: ``200`` and the decoded segments and query the handler
read from urlguard's target; ``400`` and the urlguard rule that rejected the
target; or a refusal by the server itself, before any application code ran
(raw spaces, raw UTF-8, raw NUL: the HTTP parsers refuse those). A ``*``
marks an answer that differs from what ``urlguard.parse_target`` says of the
target as sent: the server changed the target before urlguard saw it
(uvicorn's default parser, httptools, drops a ``#fragment``).

Nothing printed is raw input: targets show bytes outside printable ASCII as
``\\xHH``, decoded text is shown as Python literals.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from article_examples import EXAMPLES
from rawhttp import Response, ServerFailed, free_port, request, running
from urlguard import InvalidTarget, Policy, parse_target

HERE: Final = Path(__file__).resolve().parent

#: The policies of the example apps: the default, and /files/ keeping %2F.
ECHO_POLICY: Final = Policy()
FILES_POLICY: Final = Policy(encoded_slash="keep")

#: (what it shows, raw target). Each goes out exactly as written.
HOSTILE: Final[list[tuple[str, bytes]]] = [
    ("encoded slash", b"/echo/a%2Fb"),
    ("...kept under /files/", b"/files/a%2Fb"),
    ("Latin-1 byte, not UTF-8", b"/echo/%C4rzteblatt"),
    ("overlong '/' (%C0%AF)", b"/echo/..%C0%AF..%C0%AFetc%C0%AFpasswd"),
    ("encoded NUL", b"/echo/a%00b"),
    ("right-to-left override", b"/echo/invoice%E2%80%AEfdp.exe"),
    ("dot segment", b"/echo/%2e%2e/%2e%2e/etc/passwd"),
    ("'..;' (Tomcat's bypass)", b"/echo/..;/admin"),
    ("empty segment", b"/echo//etc/passwd"),
    ("double encoding", b"/echo/%252e%252e"),
    ("encoded backslash", b"/echo/..%5C..%5Cwindows"),
    ("malformed escape", b"/echo/a?q=%zz"),
    ("raw space", b"/echo/a b"),
    ("raw UTF-8", "/echo/café".encode()),
    ("raw NUL", b"/echo/a\x00b"),
    ("fragment", b"/echo/page#section"),
    ("9000 bytes", b"/echo/" + b"a" * 8994),
]

#: (what it shows, raw target) for the example apps' /units/{unit:segment} route.
SEGMENT_ROUTES: Final[list[tuple[str, bytes]]] = [
    ("a kept %2F: one segment", b"/units/kg%2Fs"),
    ("UTF-8", b"/units/caf%C3%A9"),
    ("two segments: not this route", b"/units/kg/s"),
    ("a kept %2F hiding '..'", b"/units/..%2Fetc"),
    ("a kept %2F hiding an absolute path", b"/units/%2Fetc%2Fpasswd"),
    ("%2F on a route without a segment", b"/echo/kg%2Fs"),
]

TARGET_WIDTH: Final = 42
CELL_WIDTH: Final = 38
GAP: Final = "  "
SHOWN_BYTES: Final = 100


@dataclass(frozen=True)
class Row:
    label: str
    target: bytes


@dataclass(frozen=True)
class Stack:
    name: str  # with versions, for the heading
    server: str  # how its refusals are named
    framework: str
    argv: list[str]
    port: int


# -- what to send -------------------------------------------------------------


def origin_form(raw: bytes) -> bytes:
    """The path and query of an absolute-form target (RFC 9112 §3.2.2)."""
    if raw.startswith(b"/"):
        return raw
    rest = raw.split(b"://", 1)[1]
    ends = [i for i in (rest.find(b"/"), rest.find(b"?")) if i >= 0]
    if not ends:
        return b"/"
    path_and_query = rest[min(ends) :]
    return path_and_query if path_and_query.startswith(b"/") else b"/" + path_and_query


def article_rows() -> list[Row]:
    """The articles' examples, under /files/ where the article keeps %2F."""
    rows: list[Row] = []
    seen: set[bytes] = set()
    for source, raw, policy_name, _policy in EXAMPLES:
        prefix = b"/files" if policy_name == "keep-slash" else b"/echo"
        target = prefix + origin_form(raw)
        if target not in seen:
            seen.add(target)
            rows.append(Row(source, target))
    return rows


def expected(target: bytes) -> int:
    """The status urlguard itself gives the target as sent (200 or 400)."""
    policy = FILES_POLICY if target.startswith(b"/files/") else ECHO_POLICY
    try:
        parse_target(target, policy)
    except InvalidTarget:
        return 400
    return 200


# -- what came back -----------------------------------------------------------


def describe(response: Response, stack: Stack) -> list[str]:
    """A cell: status, then the decoded pieces, the rule, or who refused."""
    if response.closed:
        return [f"connection closed by {stack.server}"]
    status = response.status
    kind = (response.header(b"content-type") or b"").split(b";")[0].strip()
    if kind == b"application/problem+json":
        problem = response.json()
        where = problem["component"]
        if problem["index"] is not None:
            where += f" {'segment' if where == 'path' else 'parameter'} {problem['index']}"
        return [f"{status} {problem['rule']}", f"({where})"]
    if status == 200 and kind == b"application/json":
        body = response.json()
        lines = [f"200 {body['segments']!r}"]
        if body["query"]:
            lines.append(f"query {[tuple(pair) for pair in body['query']]!r}")
        return lines
    reason = response.reason.decode("ascii", "replace")
    if status is not None and status >= 400:
        return [f"{status} refused by {stack.server}", "(urlguard never saw it)"]
    return [f"{status} {reason}"]


def describe_unit(response: Response, stack: Stack) -> str:
    """What a /units/ answer says, on one line."""
    kind = (response.header(b"content-type") or b"").split(b";")[0].strip()
    if response.status == 200 and kind == b"application/json":
        return f"200 {response.json()!r}"
    if kind == b"application/problem+json":
        return f"{response.status} {response.json()['rule']}"
    if response.closed:
        return f"connection closed by {stack.server}"
    return f"{response.status} {response.reason.decode('ascii', 'replace')}"


def ask(stack: Stack, target: bytes) -> list[str]:
    try:
        response = request(stack.port, target, headers=[(b"Accept", b"application/json")])
    except (OSError, ValueError) as error:
        return [f"no answer ({type(error).__name__})"]
    cell = describe(response, stack)
    if response.status in (200, 400) and response.status != expected(target):
        cell[0] += " *"
    return cell


# -- printing -----------------------------------------------------------------


def shown(raw: bytes) -> str:
    """A target for display: bytes outside printable ASCII, and '\\', as \\xHH."""
    text = "".join(
        chr(b) if 0x21 <= b <= 0x7E and b != 0x5C else f"\\x{b:02x}" for b in raw[:SHOWN_BYTES]
    )
    return text if len(raw) <= SHOWN_BYTES else f"{text}... ({len(raw)} bytes)"


def columns(text: str) -> int:
    """Terminal columns: East Asian wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def cut(text: str, width: int) -> int:
    """How many characters of ``text`` fit in ``width`` columns (at least one)."""
    used = 0
    for i, char in enumerate(text):
        used += columns(char)
        if used > width:
            return max(i, 1)
    return len(text)


def wrap(lines: Sequence[str], width: int) -> list[str]:
    """Each line wrapped at spaces to ``width`` columns; long words are cut."""
    wrapped: list[str] = []
    for line in lines:
        current = ""
        for word in line.split(" "):
            candidate = f"{current} {word}" if current else word
            if columns(candidate) <= width:
                current = candidate
                continue
            if current:
                wrapped.append(current)
            while columns(word) > width:
                n = cut(word, width)
                wrapped.append(word[:n])
                word = word[n:]
            current = word
        wrapped.append(current)
    return wrapped


def pad(text: str, width: int) -> str:
    return text + " " * max(width - columns(text), 0)


def table_lines(cells: Sequence[Sequence[str]]) -> Iterator[str]:
    """One table row: the cells side by side, each wrapped to its column."""
    widths = [TARGET_WIDTH] + [CELL_WIDTH] * (len(cells) - 1)
    wrapped = [wrap(cell, width) for cell, width in zip(cells, widths, strict=True)]
    for i in range(max(map(len, wrapped))):
        parts = [
            pad(w[i] if i < len(w) else "", width) for w, width in zip(wrapped, widths, strict=True)
        ]
        yield GAP.join(parts).rstrip()


def version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


# -- the servers --------------------------------------------------------------


def uvicorn_argv(app: str, port: int) -> list[str]:
    return [
        sys.executable, "-m", "uvicorn", app,
        "--app-dir", str(HERE), "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip


def gunicorn_argv(app: str, port: int) -> list[str]:
    argv = [
        sys.executable, "-m", "gunicorn", app,
        "--chdir", str(HERE), "--bind", f"127.0.0.1:{port}", "--workers", "1",
    ]  # fmt: skip
    if gunicorn_has_control_socket():
        argv.append("--no-control-socket")  # it would go to ~/.gunicorn/
    return argv


def stacks() -> list[Stack]:
    parser = "httptools" if importlib.util.find_spec("httptools") else "h11"
    uvicorn_port, gunicorn_port = free_port(), free_port()
    uvicorn = uvicorn_argv("starlette_app:app", uvicorn_port)
    gunicorn = gunicorn_argv("flask_app:app", gunicorn_port)
    return [
        Stack(
            f"uvicorn {version('uvicorn')} ({parser}) + Starlette {version('starlette')}",
            "uvicorn",
            "Starlette",
            uvicorn,
            uvicorn_port,
        ),
        Stack(
            f"gunicorn {version('gunicorn')} + Flask {version('flask')}",
            "gunicorn",
            "Flask",
            gunicorn,
            gunicorn_port,
        ),
    ]


def more_stacks() -> list[Stack]:
    """The FastAPI and Django examples, for the section on segment routes."""
    fastapi_port, django_port = free_port(), free_port()
    return [
        Stack(
            f"uvicorn {version('uvicorn')} + FastAPI {version('fastapi')}",
            "uvicorn",
            "FastAPI",
            uvicorn_argv("fastapi_app:app", fastapi_port),
            fastapi_port,
        ),
        Stack(
            f"gunicorn {version('gunicorn')} + Django {version('django')}",
            "gunicorn",
            "Django",
            gunicorn_argv("django_app:application", django_port),
            django_port,
        ),
    ]


def segment_routes(four: Sequence[Stack]) -> Iterator[str]:
    """The section on /units/{unit:segment}: each target, each framework's answer."""
    yield "== Routes on segments: /units/{unit:segment} in the four example apps"
    for label, target in SEGMENT_ROUTES:
        yield f"{shown(target)}  ({label})"
        for s in four:
            try:
                response = request(s.port, target, headers=[(b"Accept", b"application/json")])
            except (OSError, ValueError) as error:
                answer = f"no answer ({type(error).__name__})"
            else:
                answer = describe_unit(response, s)
            yield f"    {pad(s.framework, 10)} {answer}"


def gunicorn_has_control_socket() -> bool:
    from gunicorn.config import KNOWN_SETTINGS

    return any(setting.name == "control_socket_disable" for setting in KNOWN_SETTINGS)


def urlguard_log(output: str) -> list[str]:
    """urlguard's own log lines (already escaped by urlguard) in a server's
    output. Without logging configured, Python prints the message alone; with
    the default format it follows "WARNING:urlguard:"."""
    starts = ("rejected request target:", "reported (report-only, passed on) request target:")
    lines = (line.removeprefix("WARNING:urlguard:") for line in output.splitlines())
    return [line for line in lines if line.startswith(starts)]


def main() -> int:
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")
    sections = [
        ("The articles' examples (article_examples.py; docs/design-notes.md)", article_rows()),
        ("Hostile targets", [Row(label, target) for label, target in HOSTILE]),
    ]
    chosen = stacks()
    with ExitStack() as stack:
        try:
            servers = [stack.enter_context(running(s.argv, s.port, cwd=HERE)) for s in chosen]
        except ServerFailed as failure:
            print(f"tour: a server did not start: {failure}", file=sys.stderr)
            return 1
        print("urlguard tour: the same raw request targets, byte for byte, to two stacks.")
        for letter, s in zip("AB", chosen, strict=True):
            print(f"  {letter}: {s.name}, on 127.0.0.1:{s.port}")
        print("Both apps use the default policy; under /files/ an encoded slash is kept.")
        print()
        header = ["target"] + [
            f"{x}: {s.server} + {s.framework}" for x, s in zip("AB", chosen, strict=True)
        ]
        print(*table_lines([[h] for h in header]), sep="\n")
        print(GAP.join("-" * w for w in (TARGET_WIDTH, CELL_WIDTH, CELL_WIDTH)))
        for title, rows in sections:
            print(f"== {title}")
            for row in rows:
                cells = [[row.label, shown(row.target)]] + [ask(s, row.target) for s in chosen]
                print(*table_lines(cells), sep="\n")
            print()
        print(
            "200: what the handler read from urlguard's target.  400 + rule: urlguard "
            "rejected it.\n'refused by': the server's own HTTP parser answered first.  "
            "*: the server changed\nthe target before urlguard saw it (httptools drops "
            "'#fragment')."
        )
        for s, server in zip(chosen, servers, strict=True):
            lines = urlguard_log(server.output())
            print(f"\n{s.server} logged {len(lines)} lines from urlguard, the first:")
            if lines:
                print(f"  {lines[0][:300]}")
        more = more_stacks()
        try:
            for s in more:
                stack.enter_context(running(s.argv, s.port, cwd=HERE))
        except ServerFailed as failure:
            print(f"tour: a server did not start: {failure}", file=sys.stderr)
            return 1
        print()
        for s in more:
            print(f"  and {s.name}, on 127.0.0.1:{s.port}")
        starlette, flask = chosen
        print(*segment_routes([starlette, more[0], flask, more[1]]), sep="\n")
    print("\nEvery server stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Talk to a real HTTP server with exact bytes: start it, send raw request lines, read replies.

HTTP clients normalise hostile targets away (httpx, requests and curl re-encode
or refuse raw spaces, controls, non-ASCII and ``..``), so showing what a server
and urlguard do with ``GET /a%zz HTTP/1.1`` needs a raw socket. This module is
that socket, plus a way to run the server under test as a subprocess that is
always cleaned up. Standard library only; every wait is bounded.

    >>> import sys
    >>> port = free_port()
    >>> argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    >>> with running(argv, port):
    ...     response = request(port, b"/")
    >>> response.status
    200

Servers started here must bind 127.0.0.1 only: the caller passes the bind
address in ``argv``; :func:`running` only ever connects to 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

__all__ = [
    "Response",
    "Server",
    "ServerFailed",
    "build_request",
    "converse",
    "exchange",
    "free_port",
    "keep_alive",
    "request",
    "running",
]

HOST = "127.0.0.1"
CRLF = b"\r\n"
# Bounds on what we are willing to read back: a test helper must not hang or
# swallow a runaway response.
MAX_HEAD = 64 * 1024
MAX_BODY = 4 * 1024 * 1024

Headers = Sequence[tuple[bytes, bytes]]


class ServerFailed(RuntimeError):
    """The server exited early or never accepted connections; the message has its output tail."""


@dataclass(frozen=True)
class Response:
    """One HTTP response as read off the wire.

    ``status`` is ``None`` when the server closed the connection without sending
    a status line (a refusal by hanging up, which some servers do for garbage);
    that is a result to assert on, not an exception. ``version`` is the
    status line's protocol (``b"HTTP/1.1"``), ``headers`` keep their order and
    case, ``body`` is de-chunked.
    """

    status: int | None
    reason: bytes = b""
    version: bytes = b""
    headers: tuple[tuple[bytes, bytes], ...] = ()
    body: bytes = b""

    @property
    def closed(self) -> bool:
        """True when the connection closed before any status line arrived."""
        return self.status is None

    def header(self, name: bytes) -> bytes | None:
        """First value of header ``name`` (case-insensitive), or None."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body)

    @property
    def text(self) -> str:
        """The body decoded as UTF-8, undecodable bytes replaced (for assertions and messages)."""
        return self.body.decode("utf-8", "replace")


@dataclass(frozen=True)
class Server:
    """A running server subprocess, as yielded by :func:`running`."""

    port: int
    process: subprocess.Popen[bytes]
    _log: IO[bytes]

    def output(self) -> str:
        """Everything the server wrote to stdout and stderr so far."""
        self._log.flush()
        with open(self._log.name, "rb") as fh:
            return fh.read().decode("utf-8", "replace")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def _tail(server: Server, lines: int = 30) -> str:
    return "\n".join(server.output().splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the server's process group, then SIGKILL it if it outlives ``grace``."""
    if process.poll() is not None:
        return
    # The server runs in its own session, so its group id is its pid: this reaches
    # gunicorn's forked workers too, and nothing we did not start.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        break
    # Workers that ignored SIGTERM after their master exited.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def running(
    argv: list[str],
    port: int,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 20.0,
    grace: float = 5.0,
) -> Iterator[Server]:
    """Run ``argv`` until the ``with`` block ends; yield once ``127.0.0.1:port`` accepts.

    ``env`` is added to a copy of ``os.environ`` (not a replacement). Output goes
    to a temporary file (a pipe nobody reads would block a chatty server), see
    :meth:`Server.output`. If the server exits early, or the port does not accept
    connections within ``timeout`` seconds, :class:`ServerFailed` is raised with
    the tail of its output. On exit (also on error) the whole process group gets
    SIGTERM, then SIGKILL after ``grace`` seconds.
    """
    full_env = dict(os.environ)
    full_env["PYTHONUNBUFFERED"] = "1"
    if env is not None:
        full_env.update(env)
    with tempfile.NamedTemporaryFile(prefix="rawhttp-", suffix=".log") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
        server = Server(port, process, log)
        try:
            deadline = time.monotonic() + timeout
            while not _accepts(port):
                if process.poll() is not None:
                    raise ServerFailed(
                        f"{argv[:4]} exited with {process.returncode} before accepting "
                        f"on port {port}:\n{_tail(server)}"
                    )
                if time.monotonic() > deadline:
                    raise ServerFailed(
                        f"{argv[:4]} did not accept on port {port} within {timeout} s:\n"
                        f"{_tail(server)}"
                    )
                time.sleep(0.05)
            if process.poll() is not None:
                # Something else answered on the port (ours died after a failed bind).
                raise ServerFailed(
                    f"{argv[:4]} exited with {process.returncode}; port {port} is not "
                    f"ours:\n{_tail(server)}"
                )
            yield server
        finally:
            _stop(process, grace)


# The authority of an absolute-form target (RFC 3986 §3.2), when there is one.
_AUTHORITY = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]+)")


def build_request(
    port: int,
    target: bytes,
    *,
    method: bytes = b"GET",
    headers: Iterable[tuple[bytes, bytes]] = (),
    close: bool = True,
    hosts: Sequence[bytes] | None = None,
) -> bytes:
    """The exact bytes ``METHOD SP target SP HTTP/1.1``, Host, extra headers, and
    ``Connection: close`` when ``close`` (unless ``headers`` name Host or Connection).

    Host is what a client sends (RFC 9112 §3.2): an absolute-form target's
    authority, else the server's address. ``hosts`` replaces it with one
    Host line per value, in order (``()``: none at all, ``[b"a", b"b"]``:
    two), to show what a server does with a request a client should not send.

        >>> build_request(80, b"/", hosts=[b"a", b"b"]).splitlines()
        [b'GET / HTTP/1.1', b'Host: a', b'Host: b', b'Connection: close', b'']
    """
    extra = list(headers)
    names = {name.lower() for name, _ in extra}
    lines = [method + b" " + target + b" HTTP/1.1"]
    if hosts is not None:
        lines.extend(b"Host: " + host for host in hosts)
    elif b"host" not in names:
        absolute = _AUTHORITY.match(target)
        host = absolute[1] if absolute is not None else f"{HOST}:{port}".encode("ascii")
        lines.append(b"Host: " + host)
    lines.extend(name + b": " + value for name, value in extra)
    if close and b"connection" not in names:
        lines.append(b"Connection: close")
    return CRLF.join(lines) + CRLF + CRLF


class _Reader:
    """Buffered reads from a socket; ``None`` from a read means the peer closed."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.eof = False

    def _fill(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def until(self, marker: bytes, limit: int) -> bytes | None:
        while marker not in self.buf:
            if len(self.buf) > limit:
                raise ValueError(f"no {marker!r} within {limit} bytes")
            if not self._fill():
                return None
        head, _, self.buf = self.buf.partition(marker)
        return head

    def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise ValueError(f"connection closed {n - len(self.buf)} bytes short of the body")
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def rest(self) -> bytes:
        while self._fill():
            if len(self.buf) > MAX_BODY:
                raise ValueError(f"body longer than {MAX_BODY} bytes")
        data, self.buf = self.buf, b""
        return data


def _read_chunked(reader: _Reader) -> bytes:
    # RFC 9112 §7.1: chunk-size [ext] CRLF data CRLF ... 0 CRLF trailers CRLF
    body = b""
    while True:
        line = reader.until(CRLF, 1024)
        if line is None:
            raise ValueError("connection closed inside a chunked body")
        size = int(line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while reader.until(CRLF, MAX_HEAD) not in (b"", None):
                pass
            return body
        body += reader.exactly(size)
        reader.exactly(2)
        if len(body) > MAX_BODY:
            raise ValueError(f"body longer than {MAX_BODY} bytes")


def _read_response(reader: _Reader, method: bytes, *, framed_only: bool) -> Response:
    """Read one response; ``framed_only`` refuses bodies delimited only by close."""
    head = reader.until(CRLF + CRLF, MAX_HEAD)
    if head is None:
        if reader.buf.strip():
            raise ValueError(f"connection closed inside a response head: {reader.buf[:200]!r}")
        return Response(None)
    status_line, *header_lines = head.split(CRLF)
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP status line: {status_line[:200]!r}")
    status = int(parts[1])
    reason = parts[2] if len(parts) == 3 else b""
    headers = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(b":") for line in header_lines)
    )
    response = Response(status, reason, version=parts[0], headers=headers)
    # RFC 9112 §6.3: no body for HEAD, 1xx, 204 and 304; a 2xx to CONNECT starts a tunnel.
    if (
        method == b"HEAD"
        or status < 200
        or status in (204, 304)
        or (method == b"CONNECT" and status < 300)
    ):
        return response
    if (response.header(b"transfer-encoding") or b"").lower().endswith(b"chunked"):
        body = _read_chunked(reader)
    elif (length := response.header(b"content-length")) is not None:
        body = reader.exactly(int(length))
    elif framed_only:
        raise ValueError(f"{status} response without Content-Length on a keep-alive connection")
    else:
        body = reader.rest()
    return Response(status, reason, version=parts[0], headers=headers, body=body)


def exchange(port: int, data: bytes, *, method: bytes = b"GET", timeout: float = 5.0) -> Response:
    """Send ``data`` verbatim on a new connection and read one response.

    For requests :func:`request` cannot build (an Upgrade, a bare ``\\n`` line
    ending, a truncated head). A silent server raises ``TimeoutError`` after
    ``timeout`` seconds of silence: a hang is a failure, never a result.
    """
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.sendall(data)
        return _read_response(_Reader(sock), method, framed_only=False)


def request(
    port: int,
    target: bytes,
    *,
    method: bytes = b"GET",
    headers: Iterable[tuple[bytes, bytes]] = (),
    timeout: float = 5.0,
    hosts: Sequence[bytes] | None = None,
) -> Response:
    """Send ``METHOD SP target SP HTTP/1.1`` with Host and ``Connection: close``; read the reply.

    ``target`` goes out byte for byte: spaces, controls, ``%zz``, raw UTF-8,
    ``*`` and absolute-form included. ``hosts``, as in :func:`build_request`,
    sends those Host lines instead (none, several, any bytes). The body is
    read by Content-Length, by chunks, or until the server closes.
    """
    data = build_request(port, target, method=method, headers=headers, hosts=hosts)
    return exchange(port, data, method=method, timeout=timeout)


def keep_alive(
    port: int,
    targets: Iterable[bytes],
    *,
    method: bytes = b"GET",
    headers: Iterable[tuple[bytes, bytes]] = (),
    timeout: float = 5.0,
) -> list[Response]:
    """Send one request per target on a single connection, each after the previous reply.

    The last request asks for ``Connection: close``; see :func:`converse` for
    how responses are read and what a server hanging up looks like.

        keep_alive(port, [b"/a%zz", b"/ok"])   # [Response(400 ...), Response(200 ...)]
    """
    wanted = list(targets)
    extra = list(headers)
    messages = [
        build_request(port, target, method=method, headers=extra, close=i == len(wanted) - 1)
        for i, target in enumerate(wanted)
    ]
    return converse(port, messages, timeout=timeout)


def converse(port: int, messages: Sequence[bytes], *, timeout: float = 5.0) -> list[Response]:
    """Send each message (a whole request, exact bytes) on one connection, each after
    the previous reply, and return one response per message.

    Every response but the last must be framed (Content-Length or chunked):
    that is what a keep-alive client needs. As a client must (RFC 9112 §9.6),
    nothing more is sent after a response that says ``Connection: close`` (or
    an HTTP/1.0 response that does not say ``keep-alive``); those messages,
    and any the server hangs up on, come back as ``Response(None)``
    (``.closed``), so a test can assert on them.
    """
    responses: list[Response] = []
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        reader = _Reader(sock)
        for i, data in enumerate(messages):
            if reader.eof:
                responses.append(Response(None))
                continue
            try:
                sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                reader.eof = True
            method = data.split(b" ", 1)[0]
            response = _read_response(reader, method, framed_only=i < len(messages) - 1)
            responses.append(response)
            if not _persists(response):
                reader.eof = True
    return responses


def _persists(response: Response) -> bool:
    """Whether the server will read another request on this connection (RFC 9112 §9.3)."""
    if response.closed:
        return False
    options = {
        token.strip().lower() for token in (response.header(b"connection") or b"").split(b",")
    }
    if b"close" in options:
        return False
    # An HTTP/1.0 response keeps the connection only when it says keep-alive.
    return response.version != b"HTTP/1.0" or b"keep-alive" in options

"""Talk HTTP/2 in cleartext (prior knowledge) with an exact ``:path``.

Browsers speak HTTP/2, and an HTTP/2 server gets the target from the
``:path`` pseudo-header (RFC 9113 §8.3.1), not from a request line, so it
may treat hostile bytes differently than over HTTP/1.1. ``h2`` builds the
frames; its header validation and normalisation are turned off, so the
``:path`` bytes go out exactly as given (space, controls, raw UTF-8, ``#``,
absolute-form included). Every wait is bounded.

    >>> responses = converse(port, [(b"GET", b"/a%zz", ()), (b"GET", b"/ok", ())])

Servers refuse some requests by resetting the stream or by closing the whole
connection; those come back as a :class:`Response` without a status, with
``reset`` set (the RST_STREAM error code) or ``dropped`` true, so a test can
assert on them.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import h2.events
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.exceptions import ProtocolError

import rawhttp

__all__ = ["Response", "converse", "request"]

HOST = "127.0.0.1"
MAX_BODY = 4 * 1024 * 1024

Headers = Iterable[tuple[bytes, bytes]]


@dataclass(frozen=True)
class Response(rawhttp.Response):
    """One HTTP/2 response (``version`` is ``b"HTTP/2"``), or a refusal: ``reset``
    is the RST_STREAM error code when the server reset the stream, ``dropped``
    is true when the connection ended before any response to this request."""

    reset: int | None = None
    dropped: bool = False


def _config() -> H2Configuration:
    return H2Configuration(
        client_side=True,
        header_encoding=None,
        validate_outbound_headers=False,
        normalize_outbound_headers=False,
        validate_inbound_headers=False,
        normalize_inbound_headers=False,
    )


class _Client:
    def __init__(self, sock: socket.socket, port: int) -> None:
        self.sock = sock
        self.authority = f"{HOST}:{port}".encode("ascii")
        self.conn = H2Connection(config=_config())
        self.conn.initiate_connection()
        self.closed = False
        self.flush()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data and not self.closed:
            try:
                self.sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                self.closed = True

    def exchange(
        self, method: bytes, path: bytes, headers: Headers, authority: bytes | None = None
    ) -> Response:
        if self.closed:
            return Response(None, version=b"HTTP/2", dropped=True)
        stream = self.conn.get_next_available_stream_id()
        authority = self.authority if authority is None else authority
        pseudo = [(b":method", method), (b":scheme", b"http"), (b":authority", authority)]
        self.conn.send_headers(stream, [*pseudo, (b":path", path), *headers], end_stream=True)
        self.flush()
        status: int | None = None
        head: tuple[tuple[bytes, bytes], ...] = ()
        body = b""
        while not self.closed:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                self.closed = True
                break
            try:
                events = self.conn.receive_data(data)
            except ProtocolError:
                self.closed = True
                break
            for event in events:
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    head = tuple((bytes(k), bytes(v)) for k, v in event.headers)
                    status = int(dict(head)[b":status"])
                    head = tuple((name, value) for name, value in head if not name.startswith(b":"))
                elif isinstance(event, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(
                        event.flow_controlled_length, event.stream_id
                    )
                    if event.stream_id == stream:
                        body += event.data
                        if len(body) > MAX_BODY:
                            raise ValueError(f"body longer than {MAX_BODY} bytes")
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    self.flush()
                    return Response(status, version=b"HTTP/2", headers=head, body=body)
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                    self.flush()
                    return Response(None, version=b"HTTP/2", reset=int(event.error_code))
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.closed = True
            self.flush()
        return Response(None, version=b"HTTP/2", dropped=True)


def converse(
    port: int,
    requests: Sequence[tuple[bytes, bytes, Headers]],
    *,
    timeout: float = 5.0,
) -> list[Response]:
    """Send each ``(method, path, headers)`` as a new stream on one connection,
    each after the previous answer, and return one response per request."""
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        client = _Client(sock, port)
        return [client.exchange(method, path, headers) for method, path, headers in requests]


def request(
    port: int,
    path: bytes,
    *,
    method: bytes = b"GET",
    headers: Headers = (),
    timeout: float = 5.0,
    authority: bytes | None = None,
) -> Response:
    """One request on a new connection: ``:path`` is ``path``, byte for byte;
    ``:authority`` is ``authority`` (default: the server's address). ``headers``
    go out as given: a ``host`` header, or two, included."""
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        return _Client(sock, port).exchange(method, path, headers, authority)

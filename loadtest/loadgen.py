"""A small load generator on raw sockets: exact targets over keep-alive connections.

HTTP clients normalise hostile targets away (they re-encode or refuse raw
spaces, controls, non-ASCII and ``..``), so the requests here are written
byte for byte with asyncio streams. Each of ``connections`` clients sends the
traffic mix (``traffic.CASES``, weighted, in a fixed shuffled order) one
request after another on one keep-alive connection, checks every answer
against what its case expects from this server, and opens a new connection
only when the server has closed the old one. Loopback only; every read has a
timeout, and the run stops at a deadline and at a request cap.

    tally = asyncio.run(run(port, "gunicorn", seconds=5, connections=2))
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from traffic import CASES, Case

HOST = "127.0.0.1"
READ_TIMEOUT = 10.0
MAX_HEAD = 64 * 1024
MAX_BODY = 1024 * 1024
MAX_REPORTED = 20


@dataclass
class Tally:
    """What a run saw."""

    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    per_case: Counter[str] = field(default_factory=Counter)
    refusals: int = 0  # answers from the server itself, before urlguard
    refusal_closes: int = 0  # ... after which it said it would close: expected
    connections_opened: int = 0
    unexpected: list[str] = field(default_factory=list)  # wrong answers and dropped connections
    unexpected_count: int = 0
    seconds: float = 0.0

    def wrong(self, message: str) -> None:
        self.unexpected_count += 1
        if len(self.unexpected) < MAX_REPORTED:
            self.unexpected.append(message)

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[bytes, bytes]
    body: bytes
    closes: bool  # the server will close (or has closed) the connection


class Dropped(Exception):
    """The connection closed, or went silent, before a whole answer arrived."""


def schedule(seed: int = 6) -> list[Case]:
    """Every case as often as its weight, in a fixed shuffled order."""
    cases = [case for case in CASES for _ in range(case.weight)]
    random.Random(seed).shuffle(cases)
    return cases


def request_bytes(target: bytes, port: int) -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\nHost: " + f"{HOST}:{port}".encode() + b"\r\n\r\n"


async def read_answer(reader: asyncio.StreamReader) -> Answer:
    """One HTTP/1.1 response: status, headers, and a body framed by
    Content-Length, by chunks, or (only when the server closes) by EOF."""
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
    except asyncio.IncompleteReadError as error:
        raise Dropped(f"closed before a status line ({len(error.partial)} bytes)") from None
    except (TimeoutError, ConnectionError) as error:
        raise Dropped(f"no answer: {type(error).__name__}") from None
    status_line, *lines = head[:-4].split(b"\r\n")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise Dropped("not an HTTP status line")
    status = int(parts[1])
    headers: dict[bytes, bytes] = {}
    for line in lines:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    closes = headers.get(b"connection", b"").lower() == b"close"
    try:
        if b"content-length" in headers:
            body = await asyncio.wait_for(
                reader.readexactly(int(headers[b"content-length"])), READ_TIMEOUT
            )
        elif headers.get(b"transfer-encoding", b"").lower().endswith(b"chunked"):
            body = await read_chunked(reader)
        elif status in (204, 304) or 100 <= status < 200:
            body = b""
        else:  # framed by the end of the connection
            body = await asyncio.wait_for(reader.read(MAX_BODY), READ_TIMEOUT)
            closes = True
    except (asyncio.IncompleteReadError, TimeoutError, ConnectionError) as error:
        raise Dropped(f"body cut short after status {status}: {type(error).__name__}") from None
    return Answer(status, headers, body, closes)


async def read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = b""
    while True:
        size_line = await asyncio.wait_for(reader.readuntil(b"\r\n"), READ_TIMEOUT)
        size = int(size_line.split(b";")[0].strip(), 16)
        if size == 0:
            while await asyncio.wait_for(reader.readuntil(b"\r\n"), READ_TIMEOUT) != b"\r\n":
                pass
            return body
        body += await asyncio.wait_for(reader.readexactly(size + 2), READ_TIMEOUT)
        body = body[:-2]
        if len(body) > MAX_BODY:
            raise Dropped("chunked body too long")


def check(case: Case, server: str, answer: Answer, tally: Tally) -> None:
    """Compare one answer with what its case expects from this server."""
    expect = case.expected(server)
    where = f"{server} {case.name!r}"
    if answer.status != expect.status:
        tally.wrong(f"{where}: status {answer.status}, expected {expect.status}")
        return
    if expect.rule is not None and expect.rule.encode() not in answer.body:
        tally.wrong(f"{where}: 400 body does not name {expect.rule}")
    if expect.segments is not None:
        try:
            segments = json.loads(answer.body)["segments"]
        except (ValueError, KeyError, TypeError):
            tally.wrong(f"{where}: 200 body is not the echo JSON")
            return
        if segments != list(expect.segments):
            tally.wrong(
                f"{where}: segments {segments!r:.80}, expected {list(expect.segments)!r:.80}"
            )
    if answer.closes and not expect.refusal:
        tally.wrong(f"{where}: the server closed the connection after {answer.status}")


async def client(
    number: int, port: int, server: str, deadline: float, budget: list[int], tally: Tally
) -> None:
    """One keep-alive client: request after request until the deadline or the budget."""
    order = schedule()
    position = number * len(order) // 7  # clients start at different places
    writer: asyncio.StreamWriter | None = None
    reader: asyncio.StreamReader | None = None
    try:
        while time.monotonic() < deadline and budget[0] > 0:
            budget[0] -= 1
            case = order[position % len(order)]
            position += 1
            if writer is None or reader is None:
                reader, writer = await asyncio.open_connection(HOST, port, limit=MAX_HEAD)
                tally.connections_opened += 1
            writer.write(request_bytes(case.target, port))
            tally.requests += 1
            tally.per_case[case.name] += 1
            try:
                await writer.drain()
                answer = await read_answer(reader)
            except (Dropped, ConnectionError) as error:
                tally.wrong(f"{server} {case.name!r}: connection dropped: {error}")
                writer.close()
                writer = reader = None
                continue
            tally.statuses[answer.status] += 1
            check(case, server, answer, tally)
            refusal = case.expected(server).refusal
            if refusal:
                tally.refusals += 1
            # After its own refusal a server may close at any moment: start afresh.
            if answer.closes or reader.at_eof() or refusal:
                tally.refusal_closes += answer.closes and refusal
                writer.close()
                writer = reader = None
    finally:
        if writer is not None:
            writer.close()


async def run(
    port: int,
    server: str,
    *,
    seconds: float,
    connections: int,
    max_requests: int = 1_000_000,
) -> Tally:
    """Send the mix to ``127.0.0.1:port`` for ``seconds`` over ``connections`` clients."""
    tally = Tally()
    start = time.monotonic()
    budget = [max_requests]
    await asyncio.gather(
        *(
            client(number, port, server, start + seconds, budget, tally)
            for number in range(connections)
        )
    )
    tally.seconds = time.monotonic() - start
    return tally

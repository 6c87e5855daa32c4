"""Micro benchmark: ``parse_target`` against naive decoding and other URL libraries.

Every contender starts from the raw target bytes, as a server receives them,
and ends with the decoded path segments and query pairs built (so lazy
libraries pay for what an application reads):

* ``naive``: what apps do today, ``unquote(path).split("/")`` + ``parse_qsl(query)``;
* ``urlguard``: ``parse_target(raw)``, then ``.segments`` and ``.query``, with
  the parser this process chose (``urlguard.IMPLEMENTATION``: the compiled
  one wherever it was built);
* ``urlguard-py``: the same with the pure-Python reference
  (``urlguard._parser_py``), side by side in the same rounds;
* ``floor``: the same segments and query made in C with nothing checked
  and no ``Target`` (bench/floor.pyx, built when the part runs: Cython and a
  C compiler), what these objects cost by themselves;
* ``werkzeug``: its public sans-IO request (``werkzeug.sansio.request.Request``)
  given the path as gunicorn + werkzeug decode it (``unquote`` to bytes, UTF-8
  with replacement), then ``.path`` split and ``.args`` (a ``MultiDict``);
  werkzeug 3 has no ``url_decode``/``url_parse`` any more;
* ``yarl``: ``URL.build(path=..., query_string=..., encoded=True)``, then
  ``.parts`` and ``.query`` (a ``MultiDictProxy``). ``build`` keeps an LRU
  cache of 128 URLs; the corpus cycles through far more, so it always misses;
* ``ada-url``: ``ada_url.URL("http://h" + target)`` (WHATWG parsing in C++),
  ``.pathname`` split and unquoted per segment, ``.search`` through
  ``URLSearchParams``.

Rounds are interleaved: in each round every contender runs over each chunk of
100 targets in turn (the order rotated from chunk to chunk), with the garbage
collector off. The time per target is, for each chunk, the median over rounds,
summed over the chunks: on a shared machine a preemption spoils one chunk's
timing in one round, not a whole pass. A contender that raises ``ValueError``
for a target (a rejection) just moves on.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from urllib.parse import parse_qsl, unquote, unquote_to_bytes

import urlguard
from urlguard import _parser_py

from .corpus import Corpus
from .stats import Check, Goal, quiet_gc, ratios, rotated, summarize, table

Parser = Callable[[bytes], object]

# Targets timed at a time: ~0.3–1 ms, short enough that most timings on a busy
# 2-core machine are not cut by a preemption, so per-chunk medians are clean.
CHUNK = 100

# The goals of the compiled parser; the reference, a readable statement of
# the rules, has none of its own (its rows are there to compare).
COMPILED_GOALS = {
    "mixed": Goal("micro: mixed corpus, urlguard/naive", 0.15, at_most=True),
    "plain": Goal("micro: plain ASCII, urlguard/naive", 0.15, at_most=True),
    "encoded": Goal("micro: encoded, urlguard/naive", 0.10, at_most=True),
    "malformed": Goal("micro: malformed, urlguard/naive", 0.30, at_most=True),
}
# Without the compiled module (an install without a C compiler), the goals
# the pure-Python parser once had.
PYTHON_GOALS = {
    "mixed": Goal("micro: mixed corpus, urlguard/naive", 0.75, at_most=True),
    "plain": Goal("micro: plain ASCII, urlguard/naive", 0.6, at_most=True),
    "encoded": Goal("micro: encoded, urlguard/naive", 0.6, at_most=True),
}
GOALS = COMPILED_GOALS if urlguard.IMPLEMENTATION == "compiled" else PYTHON_GOALS


def naive(raw: bytes) -> object:
    path, _, query = raw.decode("latin-1").partition("?")
    return unquote(path).split("/"), parse_qsl(query)


def strict(raw: bytes) -> object:
    target = urlguard.parse_target(raw)
    return target.segments, target.query


def reference(raw: bytes) -> object:
    target = _parser_py.parse_target(raw)
    return target.segments, target.query


def _werkzeug() -> Parser:
    from werkzeug.datastructures import Headers
    from werkzeug.sansio.request import Request

    headers = Headers()
    server = ("127.0.0.1", 8000)

    def werkzeug(raw: bytes) -> object:
        path, _, query = raw.partition(b"?")
        request = Request(
            "GET",
            "http",
            server,
            "",
            unquote_to_bytes(path).decode("utf-8", "replace"),
            query,
            headers,
            "127.0.0.1",
        )
        return request.path[1:].split("/"), request.args

    return werkzeug


def _yarl() -> Parser:
    from yarl import URL

    build = URL.build

    def yarl(raw: bytes) -> object:
        path, _, query = raw.decode("latin-1").partition("?")
        url = build(path=path, query_string=query, encoded=True)
        return url.parts, url.query

    return yarl


def _ada() -> Parser:
    from ada_url import URL, URLSearchParams

    def ada(raw: bytes) -> object:
        url = URL("http://h" + raw.decode("latin-1"))
        segments = [unquote(s) for s in url.pathname[1:].split("/")]
        return segments, list(URLSearchParams(url.search[1:]).items())

    return ada


def _floor() -> Parser:
    from . import floor  # imports this module: not at the top

    return floor.parser()


# name -> (factory, what to say when it raises ImportError: None to say why
# it did, else what to install)
_LIBRARIES: dict[str, tuple[Callable[[], Parser], str | None]] = {
    "floor": (_floor, None),
    "werkzeug": (_werkzeug, "werkzeug"),
    "yarl": (_yarl, "yarl"),
    "ada-url": (_ada, "ada-url"),
}
NAMES = ("naive", "urlguard", "urlguard-py", *_LIBRARIES)


def parser(name: str) -> Parser:
    """One contender by name; ``ImportError`` when its library is not installed."""
    if name == "naive":
        return naive
    if name == "urlguard":
        return strict
    if name == "urlguard-py":
        return reference
    return _LIBRARIES[name][0]()


def contenders() -> tuple[dict[str, Parser], list[str]]:
    """The parsers to time, and a note for each library that is not installed."""
    found: dict[str, Parser] = {}
    missing: list[str] = []
    for name in NAMES:
        try:
            found[name] = parser(name)
        except ImportError as error:
            dist = _LIBRARIES[name][1]
            why = str(error) if dist is None else f"not installed (pip install {dist})"
            missing.append(f"{name}: {why}; left out")
    return found, missing


def time_targets(parse: Parser, targets: Sequence[bytes]) -> int:
    """Nanoseconds to parse every target once (the caller turns the collector off)."""
    start = time.perf_counter_ns()
    for raw in targets:
        try:  # noqa: SIM105 (contextlib.suppress would add a context manager per call)
            parse(raw)
        except ValueError:
            pass
    return time.perf_counter_ns() - start


def _chunks(targets: Sequence[bytes], size: int) -> list[Sequence[bytes]]:
    return [targets[i : i + size] for i in range(0, len(targets), size)]


def _passes(per_chunk: list[list[int]]) -> list[float]:
    """Per round, the time of the whole pass (the chunks of that round added up)."""
    return [float(sum(chunk_times)) for chunk_times in zip(*per_chunk, strict=True)]


def _rejections(parse: Parser, targets: Sequence[bytes]) -> int:
    count = 0
    for raw in targets:
        try:
            parse(raw)
        except ValueError:
            count += 1
    return count


def agreement(targets: Sequence[bytes]) -> tuple[int, int]:
    """How many accepted targets decode to the same pieces under urlguard and
    naive decoding (a check that the contenders do comparable work)."""
    same = total = 0
    for raw in targets:
        try:
            target = urlguard.parse_target(raw)
        except urlguard.InvalidTarget:
            continue
        path, _, query = raw.decode("latin-1").partition("?")
        naive_query = parse_qsl(query, keep_blank_values=True)
        total += 1
        same += (
            list(target.segments) == unquote(path).split("/")[1:]
            and list(target.query) == naive_query
        )
    return same, total


def run(corpus: Corpus, rounds: int, out: Callable[[str], None] = print) -> list[Check]:
    """Time every contender over the mixed corpus and the plain and encoded
    subsets; print one table; return the urlguard/naive checks."""
    parsers, missing = contenders()
    subsets: dict[str, Sequence[bytes]] = {
        "mixed": corpus.targets,
        "plain": corpus.subset("plain"),
        "encoded": corpus.subset("encoded"),
        "malformed": corpus.subset("malformed"),  # what a rejection costs (an attacker picks them)
    }
    names = list(parsers)
    chunks = {s: _chunks(targets, CHUNK) for s, targets in subsets.items()}
    # times[subset, parser][chunk] = ns of each round for that chunk
    times: dict[tuple[str, str], list[list[int]]] = {
        (s, n): [[] for _ in chunks[s]] for s in subsets for n in names
    }
    for round_no in range(rounds + 1):  # round 0 warms up and is dropped
        with quiet_gc():
            for subset in subsets:
                for c, chunk in enumerate(chunks[subset]):
                    for name in rotated(names, round_no + c):
                        elapsed = time_targets(parsers[name], chunk)
                        if round_no:
                            times[subset, name][c].append(elapsed)
        print(f"  micro round {round_no}/{rounds}", file=sys.stderr, end="\r", flush=True)
    print(file=sys.stderr)

    rows: list[list[str]] = []
    checks: list[Check] = []
    for subset, targets in subsets.items():
        n = len(targets)
        base = times[subset, "naive"]
        base_median = sum(summarize(c).median for c in base)
        base_floor = sum(min(c) for c in base)
        for name in names:
            per_chunk = [summarize(c) for c in times[subset, name]]
            median = sum(s.median for s in per_chunk)
            q1, q3 = sum(s.q1 for s in per_chunk), sum(s.q3 for s in per_chunk)
            passes = _passes(times[subset, name])
            r = summarize(ratios(passes, _passes(base)))
            ratio = median / base_median
            floor = sum(s.lo for s in per_chunk) / base_floor
            goal = GOALS.get(subset) if name == "urlguard" else None
            rows.append([
                subset, name, f"{median / n:,.0f}", f"{q1 / n:,.0f}–{q3 / n:,.0f}",
                f"{min(passes) / n:,.0f}–{max(passes) / n:,.0f}",
                f"{ratio:.3f}", r.iqr(".3f"), f"{floor:.3f}",
                f"{_rejections(parsers[name], targets)}/{n}",
                f"{goal.text()} {goal.verdict(ratio)}" if goal else "",
            ])  # fmt: skip
            if goal:
                checks.append(Check(goal, ratio, f"per-round IQR {r.iqr('.3f')}"))
    same, total = agreement(corpus.targets)
    out(
        f"Micro: ns per target over {rounds} interleaved rounds, timed in chunks of {CHUNK} "
        "targets. ns = per chunk the median over rounds, summed; IQR = the same with quartiles; "
        "min–max = whole passes. ×naive = ratio of those medians; its IQR is over rounds of "
        "the per-round ratio of whole passes; ×naive of minima = the same with each chunk's "
        "fastest time (the floor, least touched by a busy machine)."
    )
    out(f"urlguard = the {urlguard.IMPLEMENTATION} parser, urlguard-py = the pure-Python reference")
    headers = ["subset", "parser", "ns", "IQR", "min–max", "×naive", "×naive IQR"]
    headers += ["×naive of minima", "raised", "goal"]
    out(table(headers, rows))
    out(
        f"urlguard and naive decode to the same segments and query on {same}/{total} "
        "targets urlguard accepts"
    )
    for note in missing:
        out(note)
    return checks

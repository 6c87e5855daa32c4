"""One truth table for ``segment`` route parameters, for the four frameworks.

Each framework's test application declares these routes in its own spelling
and answers JSON ``{"route": name, **parameters}``:

    /units/{unit:segment}                  units
    /units/{a}/{b}                         pair     (the hard case: never gets kg%2Fs)
    /repos/{owner:segment}/{name:segment}  repo
    /files/{name:segment}/{rest:path}      file     (a segment next to a path)
    /dirs/{name:segment}/                  dir      (a trailing slash)
    /plain/{x}                             plain    (a plain parameter)
    /sub/s/{b:segment}                     sub      (mounted: Mount, Blueprint, include())
    /split/{name}                          split    (under path_params="split")
    /loose/{name:segment}                  loose    (under empty_segment and dot_segment "allow")
    /nul/{u:segment}                       nul      (under "split", U+0000 allowed)

guarded by :data:`KEEP`, a policy that keeps encoded slashes everywhere, and
the per-route policies :data:`REPRO_ROUTES` for the last three, so
that the table also shows what a route that did not ask for a kept ``/``
gets: the text ``%2F`` of the routing path, never a separator. The default
policy refuses every ``%2F`` (:data:`DEFAULT_TABLE`).

``expected`` is the JSON answer for a 200, the rule code for a 400, and
``None`` for a 404.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from urlguard import Policy

P = pytest.param

KEEP = Policy(encoded_slash="keep")

#: Routes whose policies once let a second, router-only view of the path
#: disagree with the path every other reader saw.
REPRO_ROUTES: dict[str, dict[str, Any]] = {
    "/split/": {"path_params": "split"},
    "/loose/": {"empty_segment": "allow", "dot_segment": "allow"},
    "/nul/": {"path_params": "split", "allow_chars": "\x00"},
}

TABLE: list[Any] = [
    P("/units/kg%2Fs", 200, {"route": "units", "unit": "kg/s"}, id="kept-slash"),
    P("/units/kg%2fs", 200, {"route": "units", "unit": "kg/s"}, id="lower-case-escape"),
    P("/units/kg/s", 200, {"route": "pair", "a": "kg", "b": "s"}, id="two-segments"),
    P("/units/caf%C3%A9", 200, {"route": "units", "unit": "café"}, id="utf8"),
    P("/units/kg", 200, {"route": "units", "unit": "kg"}, id="plain"),
    P("/units/a%2Fb%2Fc?q=1", 200, {"route": "units", "unit": "a/b/c"}, id="two-kept-a-query"),
    P("/units/50%25%2F", 200, {"route": "units", "unit": "50%/"}, id="percent-and-kept"),
    P("/units/50%25", 200, {"route": "units", "unit": "50%"}, id="percent-alone"),
    P("/units/a;b%2Fc", 200, {"route": "units", "unit": "a;b/c"}, id="semicolon-literal"),
    P("/units/..%2Fx", 400, "dot-segment", id="dot-part"),
    P("/units/.%2Fx", 400, "dot-segment", id="one-dot-part"),
    P("/units/%2Fetc", 400, "empty-segment", id="leading-kept"),
    P("/units/a%2F..", 400, "dot-segment", id="trailing-dot-part"),
    P("/units/a%2F%2Fb", 400, "empty-segment", id="empty-part-inside"),
    P("/units/c:%2Fx", 400, "drive-letter", id="drive-part"),
    P("/units/a%252Fb", 400, "double-encoding", id="double-encoded"),
    P("/units/kg%5Cs", 400, "encoded-backslash", id="backslash-not-kept"),
    P("/units/kg%2Fs/x/y", 404, None, id="no-route"),
    P("/repos/o%2Fo/n%2Fn", 200, {"route": "repo", "owner": "o/o", "name": "n/n"}, id="two-params"),
    P("/repos/o/n%2Fn", 200, {"route": "repo", "owner": "o", "name": "n/n"}, id="second-param"),
    P("/files/a%2Fb/c/d", 200, {"route": "file", "name": "a/b", "rest": "c/d"}, id="beside-path"),
    # A path parameter did not ask for a kept '/': it gets the routing path's text.
    P("/files/a/c%2Fd", 200, {"route": "file", "name": "a", "rest": "c%2Fd"}, id="path-param"),
    P("/dirs/a%2Fb/", 200, {"route": "dir", "name": "a/b"}, id="trailing-slash"),
    P("/sub/s/q%2Fr", 200, {"route": "sub", "b": "q/r"}, id="mounted"),
    P("/sub%2Fs/q", 404, None, id="kept-in-mount-prefix"),
    P("/plain/a%2Fb", 200, {"route": "plain", "x": "a%2Fb"}, id="plain-param-sees-text"),
    P("/plain/a%2Fb%25", 200, {"route": "plain", "x": "a%2Fb%25"}, id="plain-param-percent"),
    P("/plain/100%25", 200, {"route": "plain", "x": "100%"}, id="no-kept-slash-as-before"),
    P("/plain/a", 200, {"route": "plain", "x": "a"}, id="plain-route"),
    P("/nowhere/a%2Fb", 404, None, id="nowhere"),
    # A kept '/' in a ';' parameter obeys the path rules; the parameters stay in the path.
    P("/split/x;p=..%2F..%2Fetc%2Fpasswd", 400, "dot-segment", id="split-dot-parts"),
    P("/split/x;p=a%2Fb", 200, {"route": "split", "name": "x;p=a%2Fb"}, id="split-plain-param"),
    # Under empty_segment and dot_segment "allow", a kept '/' still hides no path.
    P("/loose/%2Fetc%2Fpasswd", 400, "empty-segment", id="loose-absolute"),
    P("/loose/%2F%2Fhost%2Fshare", 400, "empty-segment", id="loose-unc"),
    P("/loose/a%2F..", 400, "dot-segment", id="loose-dot-part"),
    P("/loose/a%2Fb", 200, {"route": "loose", "name": "a/b"}, id="loose-kept"),
    # U+0000 allowed: it is itself, never a '/'.
    P("/nul/%00etc%00passwd;x", 200, {"route": "nul", "u": "\x00etc\x00passwd;x"}, id="nul"),
]


def with_table_policies(guard: dict[str, Any]) -> dict[str, Any]:
    """The guard's options, with the table's where they name no policy:
    :data:`KEEP`, and :data:`REPRO_ROUTES` below it."""
    guard.setdefault("policy", KEEP)
    if guard["policy"] is KEEP:
        guard.setdefault("routes", REPRO_ROUTES)
    return guard


#: The same application under the default policy: a %2F is refused everywhere.
DEFAULT_TABLE: list[Any] = [
    P("/units/kg%2Fs", 400, "encoded-slash", id="kept-slash"),
    P("/units/..%2Fx", 400, "encoded-slash", id="dot-part"),
    P("/plain/a%2Fb", 400, "encoded-slash", id="plain-param"),
    P("/units/kg/s", 200, {"route": "pair", "a": "kg", "b": "s"}, id="two-segments"),
    P("/units/kg", 200, {"route": "units", "unit": "kg"}, id="plain"),
    P("/units/50%25", 200, {"route": "units", "unit": "50%"}, id="percent"),
]

#: Values a built URL must carry back to its ``segment`` parameter unchanged.
ROUND_TRIP = ["kg/s", "50%", "50%/x", "a?b", "a#b", "a b", "café", "a/", "ü/ß?#% x", "+;=@:"]

#: Values whose URL the default guard refuses: building them is ``ValueError``.
REFUSED = [
    P("", id="empty"),
    P(".", id="dot"),
    P("..", id="dot-dot"),
    P("/etc", id="leading-slash"),
    P("a//b", id="doubled-slash"),
    P("a/..", id="dot-part"),
    P("../x", id="dot-dot-part"),
    P("c:/x", id="drive"),
    P("%41", id="double-encoding"),
    P("a\\b", id="backslash"),
    P("a\x00b", id="nul"),
    P("a\nb", id="newline"),
    P("a\u202eb", id="bidi-override"),
    P("a\ud800b", id="lone-surrogate"),
]


def answer_of(status: int, body: dict[str, Any] | None) -> tuple[int, Any]:
    """A response as the table states it: the JSON of a 200, the rule of a
    400 (its problem+json ``rule``), ``None`` for anything else."""
    if status == 200:
        return status, body
    if status == 400 and body is not None:
        return status, body["rule"]
    return status, None


def first_answer(argv: list[str], cwd: str | os.PathLike[str]) -> Any:
    """The JSON answer of a fresh server's very first request, ``/units/kg%2Fs``
    (``argv`` with ``{port}`` where the port goes; ``running`` only connects)."""
    # Here, not at the top: the e2e applications served import this module
    # too, from a server process that has no example_apps on its path.
    from rawhttp import free_port, request, running

    port = free_port()
    with running([arg.format(port=port) for arg in argv], port, cwd=cwd):
        return json.loads(request(port, b"/units/kg%2Fs").body)

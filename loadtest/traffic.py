"""The traffic mix of the load test: raw targets and what each server must answer.

Every case is a raw request target sent byte for byte, with the answer it
must get. Most answers come from urlguard (a 200 from the guarded ``/echo/``
and ``/files/`` routes of the example apps, or its 400 naming the rule); a few
targets are refused by the server itself before urlguard sees them (a raw
space, control or non-ASCII byte, an overlong request line at gunicorn): the
server answers 400 or 414 and then closes the connection, which the load
generator counts as a refusal, not as a dropped connection.

What each server does with the odd ones was measured on loopback (uvicorn
0.54 with httptools 0.9 and with h11 0.16, gunicorn 27 with gthread):

* uvicorn + httptools reduces an absolute-form target to its path and drops
  ``#frag`` before the application sees ``raw_path``: urlguard cannot see the
  scheme, the userinfo or the fragment there (SECURITY.md).
* uvicorn + h11 passes ``noslash`` and absolute-form through byte-exact:
  urlguard rejects the first, accepts the second (Starlette then routes on
  the whole absolute URL, hence its 404).
* gunicorn refuses ``*``, ``noslash`` and request lines over 4094 bytes itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SERVERS = ("uvicorn-httptools", "uvicorn-h11", "gunicorn")


@dataclass(frozen=True)
class Expect:
    """One expected answer.

    ``rule``: a urlguard 400 whose body names this rule code. ``segments``: a
    200 from the echo routes with these decoded segments. ``refusal``: the
    server's own answer, after which it may close the connection.
    """

    status: int
    rule: str | None = None
    segments: tuple[str, ...] | None = None
    refusal: bool = False


def ok(*segments: str) -> Expect:
    return Expect(200, segments=segments)


def rejected(rule: str) -> Expect:
    return Expect(400, rule=rule)


REFUSED = Expect(400, refusal=True)


@dataclass(frozen=True)
class Case:
    """A raw target, how often it is sent, and the answer (per server when it differs)."""

    name: str
    target: bytes
    weight: int
    expect: Expect
    per_server: dict[str, Expect] = field(default_factory=dict)

    def expected(self, server: str) -> Expect:
        return self.per_server.get(server, self.expect)


LONG_SEGMENT = "a" * 5000

CASES: tuple[Case, ...] = (
    # Valid: about two thirds of the traffic.
    Case("plain", b"/echo/a/b", 30, ok("echo", "a", "b")),
    Case(
        "encoded UTF-8 and a query",
        b"/echo/caf%C3%A9/x?q=a+b&r=%E8%B5%B7",
        20,
        ok("echo", "café", "x"),
    ),
    Case(
        "kept encoded slash under /files/", b"/files/units/kg%2Fs", 10, ok("files", "units", "kg/s")
    ),
    Case("semicolon and empty pairs", b"/echo/a;b?x=1&&y=", 5, ok("echo", "a;b")),
    Case("trailing slash", b"/echo/a/", 5, ok("echo", "a", "")),
    Case("no such route", b"/nope?x=1", 3, Expect(404)),
    Case(
        "absolute-form",
        b"http://127.0.0.1/echo/abs?x=1",
        2,
        ok("echo", "abs"),
        {"uvicorn-h11": Expect(404)},
    ),
    Case(
        "5000-byte segment",
        b"/echo/" + LONG_SEGMENT.encode(),
        1,
        ok("echo", LONG_SEGMENT),
        {"gunicorn": Expect(414, refusal=True)},
    ),
    # Hostile, rejected by urlguard: about a third.
    Case("encoded dot dot", b"/echo/%2e%2e/%2E%2E/etc/passwd", 3, rejected("dot-segment")),
    Case("Tomcat ..;", b"/echo/..;/x", 2, rejected("dot-segment")),
    Case("encoded slash", b"/echo/a%2Fb", 2, rejected("encoded-slash")),
    Case("encoded backslash", b"/echo/a%5Cb", 2, rejected("encoded-backslash")),
    Case("Latin-1 Ärzteblatt", b"/echo/pubmed?term=%C4rzteblatt", 2, rejected("invalid-utf8")),
    Case("overlong slash", b"/echo/%C0%AF", 2, rejected("invalid-utf8")),
    Case("surrogate", b"/echo/%ED%A0%80", 2, rejected("invalid-utf8")),
    Case("above U+10FFFF", b"/echo/%F4%90%80%80", 2, rejected("invalid-utf8")),
    Case("RLO in the query", b"/echo/x?q=%E2%80%AEevil", 2, rejected("forbidden-char")),
    Case("encoded NUL", b"/echo/%00", 2, rejected("forbidden-char")),
    Case("encoded CR LF", b"/echo/x?h=%0D%0ASet-Cookie:x", 2, rejected("forbidden-char")),
    Case("malformed escape", b"/echo/%zz", 2, rejected("malformed-escape")),
    Case("%u escape", b"/echo/%u00E9", 1, rejected("malformed-escape")),
    Case("empty segment", b"/echo/a//b", 2, rejected("empty-segment")),
    Case("double encoding", b"/echo/%252F", 2, rejected("double-encoding")),
    Case("raw brackets", b"/echo/[x]", 1, rejected("raw-char")),
    Case("raw backslash", b"/echo/a\\b", 1, rejected("raw-char")),
    Case("raw quote", b'/echo/a"b', 1, rejected("raw-char")),
    Case("too many params", b"/echo/x?" + b"a&" * 1001, 1, rejected("too-many")),
    Case(
        "fragment",
        b"/echo/a#frag",
        1,
        rejected("fragment"),
        {"uvicorn-httptools": ok("echo", "a")},
    ),
    Case(
        "userinfo",
        b"http://u@h/echo/x",
        1,
        rejected("bad-form"),
        {"uvicorn-httptools": ok("echo", "x")},
    ),
    Case(
        "asterisk-form on GET",
        b"*",
        1,
        rejected("bad-form"),
        {"gunicorn": REFUSED},
    ),
    Case(
        "too long",
        b"/echo/" + b"a" * 9000,
        1,
        rejected("too-long"),
        {"gunicorn": Expect(414, refusal=True)},
    ),
    # Refused by the server itself: the connection closes after its 400.
    Case("raw space", b"/echo/a b", 1, REFUSED),
    Case("raw UTF-8", b"/echo/caf\xc3\xa9", 1, REFUSED),
    Case("raw control", b"/echo/\x01", 1, REFUSED),
)

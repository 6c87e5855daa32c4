"""What urlguard lets through on purpose, and the switch that narrows it.

Each claim of the "What urlguard does not stop" section of docs/security.md,
as a truth table: the default policy accepts the target and hands the handler
what the page says, the framework does what the page says with it, and the
narrowing switch the page names rejects it with the rule it names.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from typing import Any, NamedTuple

import pytest
from django.urls.converters import IntConverter
from fastapi import FastAPI
from flask import Flask, request
from starlette.applications import Starlette
from starlette.exceptions import StarletteDeprecationWarning
from starlette.responses import JSONResponse
from starlette.routing import Route
from werkzeug.test import Client

from conftest import Parser
from urlguard import InvalidTarget, Policy
from urlguard.asgi import StrictURLMiddleware as ASGIGuard
from urlguard.wsgi import StrictURLMiddleware as WSGIGuard

with warnings.catch_warnings():
    # Starlette asks for httpx2 over httpx; the project's test extra installs httpx.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

P = pytest.param

#: The switches docs/security.md names.
ASCII_ONLY = Policy(allowed_ranges=[(0x20, 0x7E)])
LATIN1 = Policy(allowed_ranges=[(0x20, 0x7E), (0xA0, 0xFF)])
LATIN1_NO_SOFT_HYPHEN = Policy(allowed_ranges=[(0x20, 0x7E), (0xA0, 0xAC), (0xAE, 0xFF)])
KEEP_SLASH = Policy(encoded_slash="keep")

FULL_WIDTH_123 = "/item/%EF%BC%91%EF%BC%92%EF%BC%93"
ARABIC_INDIC_123 = "/item/%D9%A1%D9%A2%D9%A3"


def rule(parser: Parser, raw: bytes, policy: Policy | None = None) -> str | None:
    try:
        parser.parse_target(raw, policy)
    except InvalidTarget as exc:
        return exc.rule
    return None


# --- Unicode digits ---------------------------------------------------------------------------


def flask_app() -> Flask:
    app = Flask(__name__)

    @app.get("/item/<int:item>")
    def item(item: int) -> dict[str, Any]:
        return {"item": item}

    @app.get("/q")
    def query() -> dict[str, Any]:
        return {"n": request.args.get("n", type=int)}

    return app


class Reply(NamedTuple):
    status: int
    json: Any


def flask_get(app: Flask, target: str) -> Reply:
    # The guard reads the raw target where gunicorn puts it.
    response = Client(app).get(target, environ_overrides={"RAW_URI": target})
    return Reply(response.status_code, response.get_json())


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        P(FULL_WIDTH_123, {"item": 123}, id="full-width digits in <int:>"),
        P(ARABIC_INDIC_123, {"item": 123}, id="Arabic-Indic digits in <int:>"),
        P("/item/123", {"item": 123}, id="ASCII digits in <int:>"),
        P("/q?n=%EF%BC%91%EF%BC%92", {"n": 12}, id="full-width digits in args.get(type=int)"),
    ],
)
def test_werkzeug_reads_unicode_digits_as_numbers(
    parser: Parser, target: str, expected: dict[str, int]
) -> None:
    app = flask_app()
    app.wsgi_app = WSGIGuard(app.wsgi_app, parser=parser)  # type: ignore[method-assign]
    assert flask_get(app, target) == Reply(200, expected)


@pytest.mark.parametrize(
    "target", [P(FULL_WIDTH_123, id="full-width"), P(ARABIC_INDIC_123, id="Arabic-Indic")]
)
def test_ascii_only_range_refuses_unicode_digits(parser: Parser, target: str) -> None:
    app = flask_app()
    app.wsgi_app = WSGIGuard(app.wsgi_app, policy=ASCII_ONLY, parser=parser)  # type: ignore[method-assign]
    assert flask_get(app, target).status == 400
    assert rule(parser, target.encode(), ASCII_ONLY) == "forbidden-char"
    assert rule(parser, target.encode(), LATIN1) == "forbidden-char"


def test_python_int_reads_unicode_digits() -> None:
    assert int("１２３") == int("١٢٣") == 123


def test_fastapi_int_parameters_refuse_full_width_digits(parser: Parser) -> None:
    app = FastAPI()

    @app.get("/item/{item}")
    async def item(item: int) -> dict[str, int]:
        return {"item": item}

    app.add_middleware(ASGIGuard, parser=parser)
    with TestClient(app) as client:
        assert client.get(FULL_WIDTH_123).status_code == 422
        assert client.get("/item/123").json() == {"item": 123}


def test_starlette_and_django_int_converters_match_ascii_digits_only(parser: Parser) -> None:
    async def item(request: Any) -> JSONResponse:
        return JSONResponse({"item": request.path_params["item"]})

    app = ASGIGuard(Starlette(routes=[Route("/item/{item:int}", item)]), parser=parser)
    with TestClient(app) as client:
        assert client.get(FULL_WIDTH_123).status_code == 404
        assert client.get("/item/123").json() == {"item": 123}
    assert re.fullmatch(IntConverter.regex, "123")
    assert not re.fullmatch(IntConverter.regex, "１２３")


# --- full-width dots and slashes --------------------------------------------------------------


def test_full_width_dots_and_slash_pass_and_nfkc_makes_them_a_traversal(parser: Parser) -> None:
    target = parser.parse_target(b"/files/%EF%BC%8E%EF%BC%8E%EF%BC%8Fetc%EF%BC%8Fpasswd")
    assert target.segments == ("files", "．．／etc／passwd")
    assert unicodedata.normalize("NFKC", target.segments[1]) == "../etc/passwd"
    assert rule(parser, target.raw, ASCII_ONLY) == "forbidden-char"
    assert rule(parser, target.raw, LATIN1) == "forbidden-char"


# --- zero-width and format characters ---------------------------------------------------------

FORMAT_CHARACTERS = [
    P("%E2%80%8B", "\u200b", id="U+200B zero width space"),
    P("%E2%80%8C", "\u200c", id="U+200C zero width non-joiner"),
    P("%E2%80%8D", "\u200d", id="U+200D zero width joiner"),
    P("%E2%81%A0", "\u2060", id="U+2060 word joiner"),
    P("%EF%BB%BF", "\ufeff", id="U+FEFF byte order mark"),
    P("%C2%AD", "\u00ad", id="U+00AD soft hyphen"),
]


@pytest.mark.parametrize(("escaped", "char"), FORMAT_CHARACTERS)
def test_format_characters_pass_by_default(parser: Parser, escaped: str, char: str) -> None:
    raw = f"/ad{escaped}min?user=ro{escaped}ot".encode()
    target = parser.parse_target(raw)
    assert target.segments == (f"ad{char}min",)
    assert target.query == (("user", f"ro{char}ot"),)
    assert target.segments[0] != "admin"
    assert unicodedata.category(char) == "Cf"
    assert rule(parser, raw, ASCII_ONLY) == "forbidden-char"
    assert rule(parser, raw, LATIN1_NO_SOFT_HYPHEN) == "forbidden-char"


def test_latin1_range_still_lets_the_soft_hyphen_through(parser: Parser) -> None:
    assert rule(parser, b"/ad%C2%ADmin", LATIN1) is None
    assert rule(parser, b"/ad%E2%80%8Bmin", LATIN1) == "forbidden-char"


def test_composed_and_decomposed_forms_both_pass_and_differ(parser: Parser) -> None:
    composed = parser.parse_target(b"/caf%C3%A9").segments[0]
    decomposed = parser.parse_target(b"/cafe%CC%81").segments[0]
    assert composed != decomposed
    assert unicodedata.normalize("NFC", decomposed) == composed


# --- query values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        P(b"/download?file=../../etc/passwd", id="raw"),
        P(b"/download?file=%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", id="encoded"),
        P(b"/download?file=..%5C..%5Cwindows", id="backslashes"),
    ],
)
def test_query_values_may_carry_a_traversal(parser: Parser, raw: bytes) -> None:
    value = parser.parse_target(raw).get("file")
    assert value is not None
    assert value.startswith("..")


def test_query_values_may_carry_an_absolute_path_and_a_url(parser: Parser) -> None:
    target = parser.parse_target(b"/download?file=/etc/passwd&next=https://evil.example/")
    assert target.get("file") == "/etc/passwd"
    assert target.get("next") == "https://evil.example/"


# --- what a kept %2F still means ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "segment"),
    [
        P(b"/files/a%2Fb", "a/b", id="a slash inside one segment"),
        P(b"/files/.git%2Fconfig", ".git/config", id="a dot-file below"),
        P(b"/files/a%2F", "a/", id="a trailing slash inside the segment"),
    ],
)
def test_a_kept_slash_is_a_slash_in_the_segment(parser: Parser, raw: bytes, segment: str) -> None:
    assert parser.parse_target(raw, KEEP_SLASH).segments == ("files", segment)
    assert rule(parser, raw) == "encoded-slash"

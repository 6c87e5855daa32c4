"""The character tables come from one source and match RFC 3986's literal text."""

from __future__ import annotations

import re

import pytest

from urlguard import Policy
from urlguard._url import grammar as g

# RFC 3986 §2.2 and §2.3, copied from the RFC's text, not from grammar.py.
RFC_GEN_DELIMS = ":/?#[]@"
RFC_SUB_DELIMS = "!$&'()*+,;="
RFC_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"


def chars(text: str) -> frozenset[int]:
    return frozenset(text.encode("ascii"))


def test_sets_match_rfc_3986_text() -> None:
    assert chars(RFC_GEN_DELIMS) == g.GEN_DELIMS
    assert chars(RFC_SUB_DELIMS) == g.SUB_DELIMS
    assert chars(RFC_UNRESERVED) == g.UNRESERVED
    assert chars(RFC_GEN_DELIMS + RFC_SUB_DELIMS) == g.RESERVED


def test_pchar_path_and_query_sets() -> None:
    # pchar = unreserved / pct-encoded / sub-delims / ":" / "@"   (RFC 3986 §3.3)
    assert chars(RFC_UNRESERVED + RFC_SUB_DELIMS + ":@") == g.PCHAR
    # query = *( pchar / "/" / "?" )   (§3.4), fragment likewise (§3.5)
    assert chars(RFC_UNRESERVED + RFC_SUB_DELIMS + ":@/?%") == g.QUERY_RAW
    assert g.FRAGMENT_RAW == g.QUERY_RAW
    assert chars(RFC_UNRESERVED + RFC_SUB_DELIMS + ":@/%") == g.PATH_RAW


def test_excluded_printables_are_what_the_article_lists() -> None:
    # "Proper URL Encoding and Decoding": excluded are controls, space,
    # " < > \ ^ ` { | }  and all non-ASCII.
    assert chars(' "<>\\^`{|}') == g.EXCLUDED_PRINTABLE
    printable = frozenset(range(0x21, 0x7F))
    legal = g.RESERVED | g.UNRESERVED | {g.PERCENT}
    assert printable - legal == g.EXCLUDED_PRINTABLE - {0x20}


@pytest.mark.parametrize("byte", range(256), ids=lambda b: f"{b:#04x}")
def test_every_byte_classified_once_for_the_path(byte: int) -> None:
    allowed = byte in g.PATH_RAW
    expected = chr(byte) in RFC_UNRESERVED or chr(byte) in RFC_SUB_DELIMS or chr(byte) in ":@/%"
    assert allowed == expected
    # The policy's derived byte tables agree with the set.
    assert bool(Policy()._raw_path_table[byte]) == allowed
    assert (Policy()._path_raw_bad.fullmatch(bytes([byte])) is None) == allowed


def test_browser_extras_are_measured_values() -> None:
    # Measured (docs/servers.md): Chromium and Firefox send [ ] | raw in the
    # path, [ \ ] ^ ` { | } in the query.
    assert chars("[]|") == g.BROWSER_PATH_EXTRA
    assert chars("[\\]^`{|}") == g.BROWSER_QUERY_EXTRA
    browser = Policy.browser()
    table = browser._raw_path_table
    assert {b for b in range(256) if table[b]} == set(g.PATH_RAW | g.BROWSER_PATH_EXTRA)
    table = browser._raw_query_table
    assert {b for b in range(256) if table[b]} == set(g.QUERY_RAW | g.BROWSER_QUERY_EXTRA)


def test_forbidden_ranges_cover_every_plane_noncharacter() -> None:
    nonchars = [
        cp for plane in range(17) for cp in (plane * 0x10000 + 0xFFFE, plane * 0x10000 + 0xFFFF)
    ]
    policy = Policy()
    for cp in [*nonchars, *range(0xFDD0, 0xFDF0)]:
        assert not policy.allows_char(chr(cp)), hex(cp)
    for cp in (0xFDCF, 0xFDF0, 0xFFFD, 0x10000, 0x10FFFD):
        assert policy.allows_char(chr(cp)), hex(cp)


def test_no_module_retypes_a_character_class() -> None:
    """Only grammar.py spells RFC 3986's sets; other modules derive from it."""
    import pathlib

    import urlguard

    src = pathlib.Path(urlguard.__file__).parent
    spelled = re.compile(r"""["']!\$&'\(\)\*\+,;=|-\._~["']""")
    offenders = [
        path.name
        for path in src.rglob("*.py")
        if path.name != "grammar.py" and spelled.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []

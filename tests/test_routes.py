"""The route table shared by the middlewares and the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from urlguard import Policy
from urlguard._routes import RouteTable, is_server_wide_options, path_of

KEEP = Policy(encoded_slash="keep")
SPLIT = Policy(path_params="split")
TABLE = RouteTable(Policy(), [("/files/", KEEP), ("/files/matrix/", SPLIT), ("/api", KEEP)])


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(b"/files/a", KEEP, id="prefix"),
        pytest.param(b"/files/matrix/a", SPLIT, id="longest prefix wins"),
        pytest.param(b"/files", Policy(), id="directory prefix needs its slash"),
        pytest.param(b"/%66iles/a%2Fb", KEEP, id="decoded path is compared"),
        pytest.param(b"/api", KEEP, id="segment prefix, exact"),
        pytest.param(b"/api/v1", KEEP, id="segment prefix, below"),
        pytest.param(b"/apix", Policy(), id="segment prefix is not a string prefix"),
        pytest.param(b"http://h/files/a?x", KEEP, id="absolute-form"),
        pytest.param(b"/other?/files/", Policy(), id="the query is not the path"),
    ],
)
def test_select(target: bytes, expected: Policy) -> None:
    assert TABLE.select(target) == expected


def test_mount_point_is_stripped() -> None:
    assert TABLE.select(b"/mnt/files/a", b"/mnt") == KEEP
    assert TABLE.select(b"/mntfiles/a", b"/mnt") == Policy()


def test_duplicate_prefixes_are_refused() -> None:
    with pytest.raises(ValueError, match="same prefix"):
        RouteTable(Policy(), [("/a/", KEEP), ("/%61/", SPLIT)])


def test_path_of() -> None:
    assert path_of(b"/a/b?c") == b"/a/b"
    assert path_of(b"HTTPS://h:1?x") == b"/"


# (method, target) as the callers have them: str from ASGI and WSGI, bytes
# from a log line, None when a scope lacks the key.
SERVER_WIDE = [
    pytest.param("OPTIONS", b"*", True, id="adapter: raw target"),
    pytest.param("OPTIONS", "*", True, id="ASGI without raw_path: decoded path"),
    pytest.param(b"OPTIONS", b"*", True, id="log line"),
    pytest.param("GET", b"*", False, id="another method"),
    pytest.param("options", b"*", False, id="methods are case-sensitive (RFC 9110 §9.1)"),
    pytest.param("OPTIONS", b"*?x", False, id="asterisk with a query"),
    pytest.param("OPTIONS", b"/", False, id="origin-form"),
    pytest.param(None, None, False, id="nothing"),
]


@pytest.mark.parametrize(("method", "target", "expected"), SERVER_WIDE)
def test_is_server_wide_options(method: object, target: object, expected: bool) -> None:
    assert is_server_wide_options(method, target) is expected


def test_is_server_wide_options_never_compares_bytes_with_str() -> None:
    # Under python -bb, bytes == str raises BytesWarning: each case must pass.
    cases = [(m, t) for m in ("OPTIONS", b"OPTIONS", "GET") for t in (b"*", "*", b"/a", "/a")]
    script = (
        "from urlguard._routes import is_server_wide_options as f\n"
        f"for m, t in {cases!r}: f(m, t)\n"
    )
    done = subprocess.run(
        [sys.executable, "-bb", "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr

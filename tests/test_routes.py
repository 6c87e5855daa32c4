"""The route table shared by the middlewares and the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from urlguard import Policy
from urlguard._guard.routes import RouteTable, is_server_wide_options, path_of, unmount

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


UNMOUNT = [
    # raw target, decoded mount point -> the raw target relative to it
    pytest.param(b"/mnt/a?q", b"/mnt", b"/a?q", id="below"),
    pytest.param(b"/mnt", b"/mnt", b"/", id="the mount point itself is / below it"),
    pytest.param(b"/mnt/", b"/mnt", b"/", id="the mount point and its slash"),
    pytest.param(b"/mnt?q=/x", b"/mnt", b"/?q=/x", id="the mount point, a query"),
    pytest.param(b"/mntx/a", b"/mnt", b"/mntx/a", id="ends where a segment ends"),
    pytest.param(b"/my%20app/x", b"/my app", b"/x", id="compared decoded"),
    pytest.param(b"/my app/x", b"/my app", b"/x", id="glued as it is (uvicorn)"),
    pytest.param(b"/%6Dnt", b"/mnt", b"/", id="escaped mount point itself"),
    pytest.param(b"/%6Dntx/a", b"/mnt", b"/%6Dntx/a", id="escaped, not below"),
    pytest.param(b"/%6Dnt?a=/mnt/b", b"/mnt", b"/?a=/mnt/b", id="the query is not the path"),
    pytest.param(b"/caf%C3%A9/x", "/café".encode(), b"/x", id="UTF-8 mount point"),
    pytest.param(b"/caf%E9/x", "/café".encode(), b"/caf%E9/x", id="not its UTF-8"),
    pytest.param(b"/a/b/c", b"/a/b", b"/c", id="two segments"),
    pytest.param(b"/a/%62/c", b"/a/b", b"/c", id="two segments, escaped"),
    pytest.param(b"/a%2Fb/c", b"/a/b", b"/a%2Fb/c", id="an encoded slash is no separator"),
    pytest.param(b"/a", b"/a/b", b"/a", id="above the mount point"),
    pytest.param(b"/mnt/a", b"/mnt/", b"/a", id="mount point with a trailing slash"),
    pytest.param(b"/mnt//a", b"/mnt/", b"//a", id="trailing slash: an empty segment stays"),
    pytest.param(b"/mnt//a", b"/mnt", b"//a", id="an empty segment below the mount point"),
    pytest.param(b"/a", b"//", b"/a", id="only slashes: mounted at the root"),
    pytest.param(b"/a", b"", b"/a", id="no mount point"),
    pytest.param(b"/a", b"/", b"/a", id="mounted at the root: nothing to take off"),
    pytest.param(b"/mnt*", b"/mnt", b"*", id="uvicorn: root glued to '*'"),
    pytest.param(b"/mnthttp://h/x", b"/mnt", b"http://h/x", id="uvicorn: glued to absolute-form"),
    pytest.param(b"/mnt%zz", b"/mnt", b"/mnt%zz", id="malformed escape: not below"),
]


@pytest.mark.parametrize(("raw", "mount", "relative"), UNMOUNT)
def test_unmount(raw: bytes, mount: bytes, relative: bytes) -> None:
    assert unmount(raw, mount) == relative


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
        "from urlguard._guard.routes import is_server_wide_options as f\n"
        f"for m, t in {cases!r}: f(m, t)\n"
    )
    done = subprocess.run(
        [sys.executable, "-bb", "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr

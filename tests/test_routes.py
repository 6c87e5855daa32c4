"""The route table shared by the middlewares and the CLI."""

from __future__ import annotations

import pytest

from urlguard import Policy
from urlguard._routes import RouteTable, path_of

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

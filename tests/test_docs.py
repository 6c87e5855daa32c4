"""The code in the documentation runs and says what the pages say.

The ``>>>`` examples of the sending side's page run as doctests, and the
application on each framework's page is built from the page's own code and
asked through the framework's test client. (``tox -e docs`` checks every
link, anchor and API reference; this checks the code.)
"""

from __future__ import annotations

import doctest
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from starlette.exceptions import StarletteDeprecationWarning
from werkzeug.test import Client

with warnings.catch_warnings():
    # Starlette asks for httpx2 over httpx; the project's test extra installs httpx.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

DOCS = Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(page: str) -> list[str]:
    return FENCE.findall((DOCS / page).read_text(encoding="utf-8"))


def run_page(page: str) -> dict[str, Any]:
    """The page's first Python block, run as a reader would paste it."""
    namespace: dict[str, Any] = {"__name__": f"docs_{Path(page).stem}"}
    exec(python_blocks(page)[0], namespace)
    return namespace


@pytest.mark.parametrize("page", ["sending.md"])
def test_examples_run_as_doctests(page: str) -> None:
    text = "\n".join(block for block in python_blocks(page) if ">>>" in block)
    test = doctest.DocTestParser().get_doctest(text, {}, page, str(DOCS / page), 0)
    assert len(test.examples) > 5
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize("page", ["frameworks/starlette.md", "frameworks/fastapi.md"])
def test_asgi_framework_pages(page: str) -> None:
    app = run_page(page)["app"]
    with TestClient(app) as client:
        echo = client.get("/echo/caf%C3%A9/x?q=a+b").json()
        kept = client.get("/files/kg%2Fs").json()
        refused = client.get("/echo/kg%2Fs", headers={"Accept": "application/json"})
    assert echo["segments"] == ["echo", "café", "x"]
    assert kept["segments"] == ["files", "kg/s"]
    assert (refused.status_code, refused.json()["rule"]) == (400, "encoded-slash")


def test_flask_page() -> None:
    app = run_page("frameworks/flask.md")["app"]
    client = Client(app)

    def get(target: str) -> Any:
        # The guard reads the raw target where gunicorn puts it.
        return client.get(target, environ_overrides={"RAW_URI": target})

    assert get("/echo/caf%C3%A9/x").get_json() == {"segments": ["echo", "café", "x"]}
    refused = get("/echo/kg%2Fs")
    assert (refused.status_code, refused.get_data()) == (
        400,
        b"400 Bad Request: encoded-slash: a path segment contains an encoded '/' (%2F)"
        b" (path segment 1, byte offset 8)\n",
    )

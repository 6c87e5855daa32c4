"""Log assertions shared by the ASGI and WSGI adapter tests."""

from __future__ import annotations

import logging
from collections.abc import Sequence


def assert_error_logged(
    records: Sequence[logging.LogRecord],
    ending: str | None,
    exception: type[Exception] | None,
    exception_text: str = "hook bug",
) -> None:
    """No error logged when ``ending`` is ``None``; else exactly one, from the
    ``urlguard`` logger at ERROR, its message ending with ``ending``, carrying
    ``exception`` (with ``exception_text``) or no exception at all."""
    errors = [record for record in records if record.levelno >= logging.ERROR]
    if ending is None:
        assert errors == []
        return
    (record,) = errors
    assert (record.name, record.levelno) == ("urlguard", logging.ERROR)
    assert record.getMessage().endswith(ending)
    if exception is None:
        assert not record.exc_info
    else:
        assert record.exc_info is not None
        kind, value, _ = record.exc_info
        assert kind is exception
        assert str(value) == exception_text

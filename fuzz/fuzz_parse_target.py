"""Coverage-guided fuzzing of ``urlguard.parse_target`` with atheris (libFuzzer).

Every input is parsed, as bytes, under each of the policies in
``tests/fuzz_checks.py`` (``FUZZ_POLICIES``) and once as text; the
oracle is ``check_one`` from that file: only ``InvalidTarget`` may escape, its
rule is a known code, its position lies inside the input and its message is
printable ASCII; an accepted target's pieces are all ``str``, and the same
input gives the same verdict twice. Only the ``urlguard`` package is
instrumented for coverage; where ``urlguard.parse_target`` is the compiled
parser (which atheris cannot instrument), each input also goes through the
pure-Python reference, whose branches (the rules) then guide the search.

Run it (``tox -e fuzz`` does this, for a bounded time)::

    python fuzz/build_corpus.py /tmp/corpus
    python fuzz/fuzz_parse_target.py -max_total_time=120 -max_len=9000 /tmp/corpus

Any input that fails is written as ``crash-<sha1>`` (see ``-artifact_prefix``);
add it to ``CORNER_CASES`` in ``tests/fuzz_checks.py``.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

with atheris.instrument_imports(include=["urlguard"]):
    import urlguard  # imported here so that it is instrumented
    import urlguard._url.parser_py  # the reference, which urlguard itself may not import

from fuzz_checks import FUZZ_POLICIES, check_one
from urlguard import InvalidTarget
from urlguard._url import parser_py as _parser_py


def check(data: bytes) -> None:
    if urlguard.IMPLEMENTATION == "compiled":
        for policy in FUZZ_POLICIES:  # coverage only: the reference's branches
            with contextlib.suppress(InvalidTarget):
                _parser_py.parse_target(data, policy)
    check_one(data)


def main() -> None:
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

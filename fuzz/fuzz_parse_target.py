"""Coverage-guided fuzzing of ``urlguard.parse_target`` with atheris (libFuzzer).

Every input is parsed, as bytes, under each of the policies in
``tests/test_fuzz_regressions.py`` (``FUZZ_POLICIES``) and once as text; the
oracle is ``check_one`` from that file: only ``InvalidTarget`` may escape, its
rule is a known code, its position lies inside the input and its message is
printable ASCII; an accepted target's pieces are all ``str``, and the same
input gives the same verdict twice. Only the ``urlguard`` package is
instrumented for coverage.

Run it (``tox -e fuzz`` does this, for a bounded time)::

    python fuzz/build_corpus.py /tmp/corpus
    python fuzz/fuzz_parse_target.py -max_total_time=120 -max_len=9000 /tmp/corpus

Any input that fails is written as ``crash-<sha1>`` (see ``-artifact_prefix``);
add it to ``CORNER_CASES`` in ``tests/test_fuzz_regressions.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

with atheris.instrument_imports(include=["urlguard"]):
    import urlguard  # noqa: F401  (imported here so that it is instrumented)

from test_fuzz_regressions import check_one


def main() -> None:
    atheris.Setup(sys.argv, check_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

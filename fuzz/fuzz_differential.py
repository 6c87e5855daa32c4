"""Coverage-guided differential fuzzing: urlguard against the reference parser.

The oracle is ``assert_agree`` from ``tests/reference_agreement.py``: under
each policy pair of ``tests/test_differential.py``, ``urlguard.parse_target``
and the plain reference reading of docs/rules.md (``tests/reference_parser.py``)
must agree on accept or reject, on the rule (and where it is), and on the
decoded pieces. Slower than ``fuzz_parse_target.py`` (the reference is a loop
over bytes), so inputs are capped at 512 bytes. ``urlguard`` and the reference reading are
instrumented for coverage (the latter guides the search where
``urlguard.parse_target`` is the compiled parser, which atheris cannot
instrument).

    python fuzz/build_corpus.py /tmp/corpus
    python fuzz/fuzz_differential.py -max_total_time=120 -max_len=512 /tmp/corpus
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

with atheris.instrument_imports(include=["urlguard", "reference_parser"]):
    import reference_parser  # noqa: F401  (imported here so that it is instrumented)
    import urlguard  # noqa: F401

from policy_tables import WITH_REFERENCE
from reference_agreement import assert_agree

PAIRS = [param.values for param in WITH_REFERENCE]


def check(data: bytes) -> None:
    if len(data) > 512:
        return
    for policy, ref_policy in PAIRS:
        assert_agree(data, policy, ref_policy)  # type: ignore[arg-type]


def main() -> None:
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

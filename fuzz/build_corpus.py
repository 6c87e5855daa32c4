"""Write the fuzzing seed corpus: the truth-table targets of tests/test_target.py,
the corner cases of tests/fuzz_checks.py and a few targets with a
Host line before them, one file each.

    python fuzz/build_corpus.py DIRECTORY
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_checks import CORNER_CASES, seed_targets

#: A Host line, then a target: fuzz_compiled.py checks parse_target(target, host=...).
WITH_HOSTS = [
    b"a.com\n/x",
    b"A.com:80\nhttp://a.com/x",
    b"a.com:443\nhttps://a.com/x?q",
    b"b.com\nhttp://a.com/x",
    b"[::1]:8080\nhttp://[::1]:8080/",
    b"a b\n/x%zz",
]


def seeds() -> list[bytes]:
    corner_cases = [param.values[0] for param in CORNER_CASES]
    own = [*seed_targets(), *(data for data in corner_cases if isinstance(data, bytes))]
    return [*own, *WITH_HOSTS]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python fuzz/build_corpus.py DIRECTORY", file=sys.stderr)
        return 2
    directory = Path(argv[0])
    directory.mkdir(parents=True, exist_ok=True)
    written = 0
    for seed in seeds():
        path = directory / hashlib.sha1(seed).hexdigest()
        if not path.exists():
            path.write_bytes(seed)
            written += 1
    print(f"{written} new seeds in {directory} ({len(seeds())} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

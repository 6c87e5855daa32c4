"""Coverage-guided differential fuzzing: the compiled parser against the reference.

For every input, under each policy of ``tests/test_parser_c.py``, the
compiled ``parse_target`` and the reference's must agree on everything
observable (``verdict`` of ``tests/conftest.py``: the rule, component, index, offset and
message of a rejection; every field of an accepted ``Target``), and so must
``parse_split_target`` with the input cut at its first ``?``, and
``parse_target`` with a Host: the input's first line, when it has two. The reference
is pure Python, so atheris instruments it: its branches are the rules, and
coverage of them guides the search through the compiled module's too.

    python fuzz/build_corpus.py /tmp/corpus
    python fuzz/fuzz_compiled.py -max_total_time=120 -max_len=2048 /tmp/corpus

``tox -e fuzz`` runs it for a bounded time.

Under AddressSanitizer (``tox -e asan``) libasan has to be preloaded, and it
then takes over the coverage hooks that atheris's libFuzzer needs (atheris
warns "Coverage symbols are being provided by a library other than
libFuzzer"). So there this script mutates without coverage instead: every
seed, then for a bounded time seeds and dictionary tokens spliced, cut,
flipped and truncated at random (each target ends exactly at the end of
its buffer, where an overrun would show)::

    python fuzz/fuzz_compiled.py --mutate SECONDS --dict fuzz/target.dict CORPUS_DIR
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

MUTATE = "--mutate" in sys.argv
if not MUTATE:
    import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

if MUTATE:
    import urlguard._url.parser_py as reference
else:
    with atheris.instrument_imports(include=["urlguard._url.parser_py", "urlguard._url.target"]):
        import urlguard._url.parser_py as reference

import urlguard._url.parser_c as compiled  # noqa: E402  (after the instrumented import)
from conftest import verdict  # noqa: E402
from policy_tables import EVERY_SWITCH_VALUES  # noqa: E402


def check(data: bytes) -> None:
    path, question, query = data.partition(b"?")
    host, newline, rest = data.partition(b"\n")
    for policy in EVERY_SWITCH_VALUES:
        if newline:
            _agree(f"{rest!r}, host {host!r} under {policy}", "parse_target", rest, policy, host)
        _agree(f"{data!r} under {policy}", "parse_target", data, policy)
        if question:
            _agree(f"{path!r}, {query!r} under {policy}", "parse_split_target", path, query, policy)


def _agree(what: str, function: str, *args: object) -> None:
    """The compiled ``function`` and the reference's give the same verdict on ``args``."""
    got = verdict(lambda: getattr(compiled, function)(*args))
    expected = verdict(lambda: getattr(reference, function)(*args))
    if got != expected:
        raise AssertionError(f"{what}: compiled {got}, reference {expected}")


def _tokens(path: Path) -> list[bytes]:
    """The quoted entries of a libFuzzer dictionary."""
    tokens = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if '"' in line and not line.lstrip().startswith("#"):
            text = line[line.index('"') + 1 : line.rindex('"')]
            tokens.append(text.encode("latin-1").decode("unicode_escape").encode("latin-1"))
    return tokens


def _mutant(rng: random.Random, seeds: list[bytes], tokens: list[bytes]) -> bytes:
    data = bytearray(rng.choice(seeds))
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(data))
        action = rng.randrange(5)
        if action == 0:
            data[at:at] = rng.choice(tokens)
        elif action == 1 and data:
            del data[at : at + rng.randint(1, 8)]
        elif action == 2 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif action == 3:
            data[at:at] = rng.choice(seeds)[: rng.randint(0, 64)]
        else:
            del data[at:]  # cut: a piece, an escape or a sequence ends the buffer
    return bytes(data)


def mutate(seconds: float, dictionary: Path, corpus: Path) -> int:
    seeds = [path.read_bytes() for path in sorted(corpus.iterdir()) if path.is_file()] or [b"/"]
    tokens = _tokens(dictionary)
    for seed in seeds:
        check(seed)
    rng = random.Random(20240607)
    runs = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for _ in range(100):
            check(_mutant(rng, seeds, tokens))
        runs += 100
    print(f"{len(seeds)} seeds and {runs} mutants: compiled and reference agree")
    return 0


def main() -> None:
    if MUTATE:
        args = sys.argv[1:]
        seconds = float(args[args.index("--mutate") + 1])
        dictionary = Path(args[args.index("--dict") + 1])
        sys.exit(mutate(seconds, dictionary, Path(args[-1])))
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

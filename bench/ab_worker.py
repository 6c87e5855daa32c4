"""One revision's side of ``python -m bench.ab``, with that revision's ``src``
first on ``PYTHONPATH``: its urlguard is the only one in the process. It
asks only what every revision answers (``urlguard.parse_target``,
``StrictURLMiddleware(app)``). It prints a JSON line naming its parser, then
one of ratios for each ``round N`` line read, until its input ends.
"""

from __future__ import annotations

import json
import sys

import urlguard

from .corpus import build
from .inprocess import InProcess
from .micro import Micro, naive
from .parsers import reader


def main() -> None:
    micro = Micro({"naive": naive, "urlguard": reader(urlguard)}, build())
    inprocess = InProcess({"urlguard": None}, noop=False)
    inprocess.size_batches()
    print(json.dumps({"implementation": urlguard.IMPLEMENTATION, "file": urlguard.__file__}))
    sys.stdout.flush()
    for line in sys.stdin:
        round_no = int(line.split()[1])
        ratios: dict[str, float] = {}
        parsing = micro.round(round_no)
        for subset in micro.chunks:
            ratios[f"micro {subset}"] = parsing[subset, "urlguard"] / parsing[subset, "naive"]
        requests = inprocess.round(round_no)
        for framework, tname, layer in requests:
            if layer != "bare":
                bare = requests[framework, tname, "bare"]
                ratios[f"{framework} {tname}"] = requests[framework, tname, layer] / bare
        print(json.dumps(ratios), flush=True)
    inprocess.close()


if __name__ == "__main__":
    main()

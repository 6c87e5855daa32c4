"""Exit non-zero unless the compiled parser imported here was built with
AddressSanitizer (``tox -e asan``): a run on an unsanitized module would pass
without checking anything.

    LD_PRELOAD="$(gcc -print-file-name=libasan.so)" python fuzz/check_sanitized.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import urlguard
import urlguard._url.parser_c as compiled


def main() -> int:
    module = Path(compiled.__file__ or "")
    instrumented = b"__asan_report_load" in module.read_bytes()
    print(f"{module.name}: {'built with' if instrumented else 'NOT built with'} AddressSanitizer")
    print(f"urlguard.IMPLEMENTATION = {urlguard.IMPLEMENTATION!r}")
    return 0 if instrumented and urlguard.IMPLEMENTATION == "compiled" else 1


if __name__ == "__main__":
    sys.exit(main())

"""``python -m urlguard``: the same as the ``urlguard`` command (see :mod:`urlguard.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m trainium_lab``: the course's calculators from a terminal (see :mod:`trainium_lab.cli`)."""

import sys

from trainium_lab.cli import main

if __name__ == "__main__":
    sys.exit(main())

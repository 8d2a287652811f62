"""`python -m kbroker serve ...`: the same command line as the `kbroker` script."""

import sys

from kbroker.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""`python -m atrium_sdk build ...`: see `atrium_sdk._build`."""

import sys

from ._build import main

if __name__ == "__main__":
    sys.exit(main())

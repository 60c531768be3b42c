"""Entry script of the bundled executable: everything happens in compile_studio.__main__."""

import sys

from compile_studio.__main__ import main

if __name__ == "__main__":
    sys.exit(main())

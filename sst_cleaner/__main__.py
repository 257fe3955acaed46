import sys

from sst_cleaner.cli import main

if __name__ == "__main__":
    sys.exit(main())

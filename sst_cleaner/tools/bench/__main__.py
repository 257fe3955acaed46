"""``python -m sst_cleaner.tools.bench``."""

import sys

from sst_cleaner.tools.bench import main

sys.exit(main())

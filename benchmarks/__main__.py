"""``python -m benchmarks [--quick]``: run every benchmark (see run.py, BENCHMARKS.md)."""

import sys

from benchmarks.run import main

sys.exit(main())

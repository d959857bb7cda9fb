"""``python -m bench [--quick]``: run every benchmark (see bench/run.py and BENCHMARKS.md)."""

import sys

from bench.run import main

sys.exit(main())

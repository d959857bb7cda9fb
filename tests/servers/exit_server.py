"""Exits at once with an explanation on stderr, as a misconfigured server would."""

import sys

print("fatal: missing configuration file settings.toml", file=sys.stderr, flush=True)
sys.exit(3)

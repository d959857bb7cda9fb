"""Starts, reads nothing, answers nothing; ends by itself after a minute at most."""

import sys
import time

print("silent server up, and staying quiet", file=sys.stderr, flush=True)
time.sleep(60)

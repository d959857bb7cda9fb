"""Writes text that is not JSON-RPC to stdout and never answers (bounded so it cannot linger)."""

import sys
import time

print("this is not json-rpc", flush=True)
print("garbage server: logging to the wrong stream", file=sys.stderr, flush=True)
for _ in range(600):
    sys.stdout.write("still not json\n")
    sys.stdout.flush()
    time.sleep(0.1)

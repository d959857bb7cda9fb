"""The loop the small raw JSON-RPC test servers share: read a line, answer by method.

These servers speak newline-delimited JSON-RPC over stdio with the standard library only, so
they can say what no SDK server would (refuse a handshake, name an unknown version, lie about
a result). Each gives a table of method → handler; a handler returns the reply's
``{"result": ...}`` or ``{"error": ...}``. A method with no handler is METHOD_NOT_FOUND,
notifications get no reply, and a line that is not JSON is skipped.
"""

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def not_found(method: object) -> dict[str, Any]:
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def serve(handlers: Mapping[str, Handler], *, log_methods: bool = False) -> None:
    """Answer requests until stdin ends; with ``log_methods``, each method goes to stderr."""
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method = msg.get("method")
        if log_methods:
            print(f"method {method}", file=sys.stderr, flush=True)
        if "id" not in msg or method is None:
            continue
        handler = handlers.get(method)
        answer = handler(msg) if handler is not None else not_found(method)
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **answer}) + "\n")
        sys.stdout.flush()

"""Raw JSON-RPC over stdio (stdlib only) that offers a huge or endless catalog of tools.

    big_catalog_server.py --tools 10001 [--page-size 500] [--desc-bytes 100]
    big_catalog_server.py --endless [--page-size 10]     # a new cursor on every page, forever
    big_catalog_server.py --tools 600000 --tiny --page-cache /tmp/page.json  # benchmarks

``--tiny`` tools are ``{"name":"tN","inputSchema":{}}``; ``--page-cache`` keeps the encoded
single page in a file, so a benchmark's repeated connects do not regenerate it.

It counts the tools/list requests it answers; a call of any tool returns that number. With
``--flipper`` it also lists ``flip``: calling it first changes ``t0``'s description and
announces it (``tools/list_changed``), a re-list of the whole catalog, with one changed tool,
that costs this server little.
"""

import argparse
import contextlib
import json
import sys
import time

out = sys.stdout.buffer


def send(body: dict[str, object]) -> None:
    out.write(json.dumps(body).encode() + b"\n")
    out.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--page-size", type=int, default=0, help="0: every tool on one page")
    parser.add_argument("--desc-bytes", type=int, default=20)
    parser.add_argument("--endless", action="store_true")
    parser.add_argument("--page-delay", type=float, default=0.0,
                        help="seconds before each page (so a test can outlast a deadline)")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--flipper", action="store_true", help="also list the flip tool")
    parser.add_argument("--page-cache", default=None)
    args = parser.parse_args()
    per_page = args.page_size or max(args.tools, 1)
    description = "d" * args.desc_bytes
    lists = 0
    version = 1

    def tool(i: int) -> dict[str, object]:
        if args.tiny:
            return {"name": f"t{i}", "inputSchema": {}}
        text = f"{description} (version {version})" if i == 0 else description
        return {"name": f"t{i}", "description": text, "inputSchema": {"type": "object"}}

    def cached_page() -> bytes:
        with contextlib.suppress(OSError), open(args.page_cache, "rb") as file:
            return file.read()
        page = json.dumps([tool(i) for i in range(args.tools)]).encode()
        with open(args.page_cache, "wb") as file:
            file.write(page)
        return page

    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "catalog", "version": "0.0.1"}}})
        elif method == "tools/list":
            lists += 1
            if args.page_delay:
                time.sleep(args.page_delay)
            if args.page_cache and not args.page_size:
                out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]).encode()
                          + b',"result":{"tools":' + cached_page() + b"}}\n")
                out.flush()
                continue
            cursor = (msg.get("params") or {}).get("cursor")
            start = int(cursor) if cursor else 0
            stop = start + per_page if args.endless else min(start + per_page, args.tools)
            result: dict[str, object] = {"tools": [tool(i) for i in range(start, stop)]}
            if args.flipper and start == 0:
                result["tools"] = [{"name": "flip", "inputSchema": {"type": "object"}},
                                   *result["tools"]]  # type: ignore[misc]
            if args.endless or stop < args.tools:
                result["nextCursor"] = str(stop)
            send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        elif method == "tools/call":
            if (msg.get("params") or {}).get("name") == "flip":
                version += 1
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "content": [{"type": "text", "text": str(lists)}]}})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"],
                  "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        main()

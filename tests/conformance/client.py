"""The MCP conformance runner's client under test, through toolbench's public API only.

``conformance client --command "python tests/conformance/client.py" --scenario S`` starts a
scenario server, appends its URL, and sets ``MCP_CONFORMANCE_SCENARIO``,
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and (some scenarios) ``MCP_CONFORMANCE_CONTEXT``. Each
scenario does what a user would: connect a bench, list, call. The ``authorize`` hook plays the
browser: it fetches the authorization URL without following the redirect and returns the
``Location`` it was sent to (what a person's browser would end on).

At the 2026-07-28 wire the bench uses ``protocol_mode="auto"`` (the SDK's probe); at the dated
2025 revisions, the default mode. Exit status 0 means the client finished without error.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from typing import Any

import toolbench as tb

MODERN = ("2026-07-28",)
VERSION = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
REDIRECT_URI = "http://localhost:3000/callback"
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


def mode() -> dict[str, Any]:
    if VERSION in MODERN and SCENARIO != "json-schema-ref-no-deref":
        return {"protocol_mode": "auto"}
    return {}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def browser(authorization_url: str) -> str:
    """What a person's browser does: open the page, end on the redirect's ``Location``."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(authorization_url, timeout=10)
    except urllib.error.HTTPError as exc:
        if exc.code in (301, 302, 303, 307, 308) and exc.headers.get("Location"):
            return str(exc.headers["Location"])
        raise
    raise RuntimeError("the authorization page did not redirect")


def elicit_defaults(params: Any) -> dict[str, Any]:
    schema = getattr(params, "requested_schema", None) or {}
    content = {k: v["default"] for k, v in schema.get("properties", {}).items()
               if isinstance(v, dict) and "default" in v}
    return {"action": "accept", "content": content}


def stub_required(schema: dict[str, Any]) -> dict[str, Any]:
    by_type = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {},
               "array": [], "null": None}
    props = schema.get("properties", {})
    return {n: by_type.get(props.get(n, {}).get("type"), "x") for n in schema.get("required", [])}


def auth_option() -> Any:
    ctx = context()
    if SCENARIO == "auth/client-credentials-basic":
        return tb.ClientCredentials(ctx["client_id"], client_secret=ctx["client_secret"])
    if SCENARIO == "auth/client-credentials-jwt":
        return tb.ClientCredentials(ctx["client_id"], private_key=ctx["private_key_pem"],
                                    signing_algorithm=ctx.get("signing_algorithm", "ES256"))
    return tb.OAuth(client_id=ctx.get("client_id"), client_secret=ctx.get("client_secret"),
                    client_metadata_url=CIMD_URL, redirect_uri=REDIRECT_URI,
                    authorize=browser, store="memory", timeout=30)


def main(url: str) -> None:
    bench = tb.Bench(elicitation=elicit_defaults, sampling=lambda params: "",
                     roots=[], timeout=30, connect_timeout=30)
    with bench:
        if SCENARIO.startswith("auth/"):
            bench.connect("s", url, namespace=None, auth=auth_option(), **mode())
            names = list(bench.catalog()["name"])
            if names:
                try:
                    bench.call(names[0], {}, check=False)
                except tb.ToolError as exc:
                    print(f"call {names[0]}: {exc}", file=sys.stderr)
            return
        bench.connect("s", url, namespace=None, **mode())
        catalog = bench.catalog()
        names = list(catalog["name"])
        if SCENARIO == "json-schema-2020-12-preservation":
            focal = catalog.set_index("name").loc["json_schema_2020_12_tool", "input_schema"]
            bench.call("json_schema_echo", schema=focal)
        elif SCENARIO in ("tools_call", "request-metadata", "http-standard-headers"):
            # two of these servers list no tools: a bench calls only what was listed
            if "add_numbers" in names:
                bench.call("add_numbers", a=5, b=3)
        elif SCENARIO == "sse-retry":
            bench.call("test_reconnection")
        elif SCENARIO == "elicitation-sep1034-client-defaults":
            bench.call("test_client_elicitation_defaults")
        elif SCENARIO == "sep-2322-client-request-state":
            for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state",
                         "test_mrtr_no_result_type"):
                bench.call(name)
        elif SCENARIO == "http-invalid-tool-headers":
            for name, schema in zip(names, catalog["input_schema"], strict=True):
                try:
                    bench.call(name, stub_required(schema or {}), check=False)
                except tb.ToolError as exc:
                    print(f"call {name}: {exc}", file=sys.stderr)
        elif SCENARIO == "http-custom-headers":
            for call in context().get("toolCalls", []):
                if call["name"] in names:
                    try:
                        bench.call(call["name"], call.get("arguments") or {}, check=False)
                    except tb.ToolError as exc:
                        print(f"call {call['name']}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[-1])

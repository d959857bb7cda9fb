"""Where the installed SDK is stricter than the protocol, the protocol wins.

SEP-2322 (2026-07-28) says a client MUST take a result without ``resultType`` as
``"complete"``. mcp 2.3.0 checks every 2026-07-28 result against its wire schema, which
requires the field, so a server that leaves it out fails every call with a pydantic
``ValidationError`` (toolbench then reported ``Malformed``, and the official conformance
scenario ``sep-2322-client-request-state`` failed for toolbench as for the SDK's own client).

The fix fills in the default where the session receives a raw result, before the SDK checks
it, and only on a 2026-07-28 connection (a 2025 session drops later revisions' fields itself).
It adds nothing else: a result that is wrong in any other way still fails the SDK's check.
When the SDK follows the spec, ``needs_result_type_default`` turns false and this is a no-op.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp import Client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SendRaw = Callable[..., Awaitable[dict[str, Any]]]


def complete_by_default(raw: object) -> object:
    """``raw`` with ``resultType: "complete"`` when it is a result object without one."""
    if isinstance(raw, dict) and "resultType" not in raw:
        return {**raw, "resultType": "complete"}
    return raw


def default_result_type(client: Client,
                        received: Callable[[str, Any], None] | None = None) -> bool:
    """Make ``client``'s session read a missing ``resultType`` as the spec says; and hand
    each result to ``received(method, raw)`` first (the cache hints, read and made safe
    before the SDK's check: ``toolbench._transports.mcp.methods.hints``).

    True when the session was patched (a 2026-07-28 connection whose session sends through a
    dispatcher); False when there is nothing to do.
    """
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    dispatcher = getattr(client.session, "_dispatcher", None)
    send: SendRaw | None = getattr(dispatcher, "send_raw_request", None)
    if send is None:
        return False

    async def send_raw_request(method: str, params: Mapping[str, Any] | None,
                               opts: Any = None) -> Any:
        raw = complete_by_default(await send(method, params, opts))
        if received is not None:
            received(method, raw)
        return raw

    # The SDK has no hook between receiving a result and checking it; its session sends every
    # request (calls, listings, input-required retries) through this one method.
    setattr(dispatcher, "send_raw_request", send_raw_request)  # noqa: B010
    return True

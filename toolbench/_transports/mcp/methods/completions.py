"""``completion/complete`` on one MCP connection: a server's suggestions for an argument.

A completion is a read (asking twice does nothing twice), sent through
``McpClient.request``, the envelope every non-call request shares (connect on first use, a
``max_concurrent`` slot, one timeout, DESIGN.md's error table). What goes out is checked
first (strings only, bounded lengths), so a bad request is ``Refused`` with nothing sent;
what comes back is untrusted: at most ``MAX_VALUES`` suggestions of at most ``VALUE_CHARS``
characters each (MCP itself says at most 100).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import mcp_types as types

from toolbench._core import html as _html
from toolbench._core.errors import Malformed, Refused

if TYPE_CHECKING:
    from mcp import Client

    from toolbench._transports.mcp.session import McpSession

Ref = tuple[Literal["prompt", "template"], str]
"""What is being completed: ``("prompt", name)`` or ``("template", uri_template)``."""
MAX_VALUES = 100
"""Suggestions kept (MCP's own cap)."""
VALUE_CHARS = 1_000
"""A longer suggestion is cut."""
INPUT_CHARS = 8_192
"""The longest reference, argument name, value or context value sent."""
MAX_CONTEXT = 100
"""Context arguments sent at most."""


def _check_text(label: str, value: object, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value) or len(value) > INPUT_CHARS:
        rule = "a str" if empty else "a non-empty str"
        raise Refused(f"invalid {label} {_html.shorten(repr(value), 120)}: {rule} of at most "
                      f"{INPUT_CHARS:,} characters; nothing was sent")
    return value


def check(ref: object, argument: object, value: object,
          context: Mapping[str, str] | None) -> tuple[Ref, str, str, dict[str, str] | None]:
    """The request's parts, or ``Refused`` naming the bad value and the rule."""
    if (not isinstance(ref, tuple) or len(ref) != 2 or ref[0] not in ("prompt", "template")):
        raise Refused(f"invalid completion reference {_html.shorten(repr(ref), 120)}: "
                      "('prompt', name) or ('template', uri_template); nothing was sent")
    kind, name = ref
    name = _check_text(f"{kind} reference", name)
    argument = _check_text("argument name", argument)
    value = _check_text("value", value, empty=True)
    chosen: dict[str, str] | None = None
    if context is not None:
        if not isinstance(context, Mapping) or len(context) > MAX_CONTEXT:
            raise Refused(f"invalid context {_html.shorten(repr(context), 120)}: a mapping of "
                          f"at most {MAX_CONTEXT} argument names to str values; nothing was "
                          "sent")
        chosen = {_check_text("context argument name", k):
                  _check_text(f"context value of {k!r}", v, empty=True)
                  for k, v in context.items()}
    return (kind, name), argument, value, chosen


async def complete(mcp: McpSession, server: str, ref: Ref, argument: str, value: str,
                   context: Mapping[str, str] | None = None, *,
                   timeout: float | None = None) -> list[str]:
    """See :meth:`McpClient.complete`."""
    mcp.check_server(server)
    (kind, name), argument, value, chosen = check(ref, argument, value, context)
    reference: types.PromptReference | types.ResourceTemplateReference = (
        types.PromptReference(type="ref/prompt", name=name) if kind == "prompt"
        else types.ResourceTemplateReference(type="ref/resource", uri=name))

    async def send(client: Client) -> types.CompleteResult:
        return await client.complete(reference, {"name": argument, "value": value},
                                     context_arguments=chosen)

    answer = await mcp.request("completion/complete", send, timeout=timeout,
                               offers="completions")
    values = getattr(getattr(answer, "completion", None), "values", None)
    if not isinstance(values, list):
        raise Malformed(f"server {server!r} answered completion/complete without a list of "
                        "values")
    return [_html.shorten(str(v), VALUE_CHARS) for v in values[:MAX_VALUES]]

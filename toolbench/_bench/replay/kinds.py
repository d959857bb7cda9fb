"""Cassettes, the server's side, beyond tools: a recording's resources, templates and prompts.

``build_server`` (``toolbench._bench.replay.serve``) adds these handlers when the recording
holds any: ``resources/list``, ``resources/templates/list`` and ``prompts/list`` answer what
the journal's latest snapshot of the server lists; ``resources/read`` answers a URI that was
read (the last successful read of it) with the recorded contents, and ``prompts/get`` a
recorded argument set with the recorded messages. Anything else is refused
(``INVALID_PARAMS``, so a client sees ``Refused``) with a message saying it was not recorded;
a recorded answer larger than ``MAX_REPLAYED_BYTES`` or that will not validate (a journal
edited by hand) is refused likewise, saying so. Recorded text goes back as it was recorded
(markup included): it is the server's data, and the bench escapes it when it shows it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolbench._bench.journal.record import arguments_key

if TYPE_CHECKING:
    from toolbench._bench.replay.recording import Recording

MAX_REPLAYED_BYTES = 16 * 1024 * 1024
"""The largest recorded answer a recording sends back (a client's default cap is 32 MiB)."""
SHOWN_ARGS = 300
"""How much of an unrecorded argument set or URI an error message quotes."""


def _not_recorded(recording: Recording, what: str) -> Exception:
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    if len(what) > SHOWN_ARGS:
        what = what[:SHOWN_ARGS] + "..."
    return MCPError(types.INVALID_PARAMS, f"not recorded: {what} in this recording of "
                                          f"{recording.server!r}")


def _listed(model: Any, items: list[dict[str, Any]], fields: Mapping[str, str]) -> list[Any]:
    """``model`` of each item (its fields renamed by ``fields``); a damaged one is left out."""
    out = []
    for item in items:
        try:
            out.append(model.model_validate({theirs: item.get(ours)
                                             for theirs, ours in fields.items()
                                             if item.get(ours) is not None}))
        except Exception:  # a damaged or hand-edited item: the others are served
            continue
    return out


def resource_handlers(recording: Recording) -> dict[str, Any]:
    """The ``Server`` handlers that list the recorded resources and templates and answer
    recorded reads."""
    import mcp_types as types
    from mcp.server import ServerRequestContext

    listed = _listed(types.Resource, recording.resources,
                     {"uri": "uri", "name": "label", "title": "title",
                      "description": "description", "mimeType": "mime_type",
                      "annotations": "annotations"})
    for resource in listed:  # a resource's name is required; a recording may lack it
        resource.name = resource.name or str(resource.uri)
    templates = _listed(types.ResourceTemplate, [{**t, "label": t.get("label") or t.get("uri")}
                                                 for t in recording.templates],
                        {"uriTemplate": "uri", "name": "label", "title": "title",
                         "description": "description", "mimeType": "mime_type",
                         "annotations": "annotations"})

    async def list_resources(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None,
                             ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=listed)

    async def list_templates(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None,
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read(ctx: ServerRequestContext[Any],
                   params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        record = recording.reads.get(uri)
        if record is None:
            raise _not_recorded(recording, f"resource {uri!r} was never read (it holds "
                                           f"{len(recording.reads)} recorded reads)")
        contents = [block.get("resource") for block in record.content
                    if isinstance(block, Mapping)]
        result: types.ReadResourceResult = _validated(
            recording, types.ReadResourceResult, {"contents": contents},
            f"the recorded read of {uri!r}")
        return result

    return {"on_list_resources": list_resources, "on_list_resource_templates": list_templates,
            "on_read_resource": read}


def prompt_handlers(recording: Recording) -> dict[str, Any]:
    """The ``Server`` handlers that list the recorded prompts and answer recorded fetches."""
    import mcp_types as types
    from mcp.server import ServerRequestContext

    listed = _listed(types.Prompt, recording.prompts,
                     {"name": "name", "title": "title", "description": "description",
                      "arguments": "arguments"})
    described = {p.name: p.description for p in listed}

    async def list_prompts(ctx: ServerRequestContext[Any],
                           params: types.PaginatedRequestParams | None,
                           ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=listed)

    async def get(ctx: ServerRequestContext[Any],
                  params: types.GetPromptRequestParams) -> types.GetPromptResult:
        key = arguments_key(dict(params.arguments or {}))
        record = recording.fetches.get((params.name, key))
        if record is None:
            held = sum(1 for name, _ in recording.fetches if name == params.name)
            raise _not_recorded(recording, f"prompt {params.name} was never fetched with "
                                           f"{key} (it holds {held} recorded argument sets "
                                           "for it)")
        result: types.GetPromptResult = _validated(
            recording, types.GetPromptResult,
            {"messages": record.content, "description": described.get(params.name)},
            f"the recorded fetch of prompt {params.name!r}")
        return result

    return {"on_list_prompts": list_prompts, "on_get_prompt": get}


def _validated(recording: Recording, model: Any, data: dict[str, Any], what: str) -> Any:
    """``model`` of ``data``; one too large or malformed is refused, saying so."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    size = len(json.dumps(data, default=repr))
    if size > MAX_REPLAYED_BYTES:
        raise MCPError(types.INVALID_PARAMS, f"{what} is {size:,} bytes, over the "
                                             f"{MAX_REPLAYED_BYTES:,} a recording replays")
    try:
        return model.model_validate({k: v for k, v in data.items() if v is not None})
    except Exception as exc:
        first = str(exc).splitlines()[0][:200]
        raise MCPError(types.INVALID_PARAMS, f"{what} in the recording of "
                                             f"{recording.server!r} is not valid ({first})"
                       ) from None

"""Cassettes, the server's side: a journal served back as an MCP server, offline.

``serve_recording(journal, server=None)`` reads a journal once (``read_recording``, in
``toolbench._bench.replay.recording``): the recorded server's tools from its latest catalog
snapshot (names, titles, descriptions and schemas as declared), and every tool call that
landed with its arguments and answer. It returns an MCP server (the
SDK's low-level ``Server``) that lists those tools and answers an argument set that was
recorded with the recorded result (the last one, when it was recorded more than once): a
success as it came, a tool error as an ``isError`` result. An argument set that was not
recorded, or a tool not in the recording, is refused (``INVALID_PARAMS``, so a client sees
``Refused``) with a message saying so. Use it in process (``bench.connect(name, server)``),
or over stdio or streamable HTTP with ``run_recording`` (``toolbench serve-recording``).

**Resources and prompts too.** The journal records reads (``kind="resource"``) and prompt
fetches (``kind="prompt"``) like calls, and a bench with a journal snapshots resources,
templates and prompts at connect. So the served recording lists the recorded resources,
templates and prompts, answers ``resources/read`` of a URI that was read with the recorded
contents, and ``prompts/get`` of a recorded argument set with the recorded messages; any other
URI or argument set is refused (``INVALID_PARAMS``) with a message that says it was not
recorded. A recorded read or fetch that will not validate is refused likewise, saying so.
Those handlers are ``toolbench._bench.replay.kinds``; this module builds the server, runs it,
and gives the ``toolbench serve-recording`` command.

**What was recorded is replayed, not trusted.** A recorded result is the server's data: it
goes back as it was recorded (markup and control characters included; the bench escapes them
when it shows them). A recorded result that is not a valid tool result (a journal edited or
damaged by hand) is answered as an ``isError`` result that says so, and one larger than
``MAX_REPLAYED_BYTES`` likewise, so no recording can make the server send what a client
would refuse as too large.
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal

from toolbench._bench.journal.record import arguments_key
from toolbench._bench.replay.kinds import (
    MAX_REPLAYED_BYTES,
    SHOWN_ARGS,
    prompt_handlers,
    resource_handlers,
)
from toolbench._bench.replay.recording import Recording, read_recording


def _result(record: Any) -> Any:
    """The recorded answer as a ``CallToolResult``; a malformed or huge one says so."""
    import mcp_types as types
    from pydantic import ValidationError

    content = record.content
    if not content and record.text:
        content = [{"type": "text", "text": record.text}]
    size = len(json.dumps({"c": content, "s": record.structured}, default=repr))
    if size > MAX_REPLAYED_BYTES:
        return _error(f"the recorded result is {size:,} bytes, over the "
                      f"{MAX_REPLAYED_BYTES:,} a recording replays")
    if not record.ok and not content:
        content = [{"type": "text", "text": record.error or "the tool failed"}]
    try:
        return types.CallToolResult.model_validate(
            {"content": content, "structuredContent": record.structured,
             "isError": not record.ok})
    except (ValidationError, ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0][:200]
        return _error(f"the recorded result is not a valid tool result ({first})")


def _error(text: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def build_server(recording: Recording) -> Any:
    """The recording as the SDK's low-level MCP ``Server``."""
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext
    from mcp.shared.exceptions import MCPError

    listed = []
    for item in recording.tools:
        try:
            listed.append(types.Tool(
                name=str(item.get("name")), title=item.get("title"),
                description=item.get("description"),
                input_schema=item.get("input_schema") or {"type": "object"},
                output_schema=item.get("output_schema"),
                annotations=item.get("annotations")))
        except Exception:  # a damaged item is left out; the others are served
            continue
    names = {t.name for t in listed}

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name not in names:
            raise MCPError(types.INVALID_PARAMS,
                           f"tool {params.name!r} is not in the recording of server "
                           f"{recording.server!r}")
        record = recording.answers.get((params.name, arguments_key(arguments)))
        if record is None:
            shown = arguments_key(arguments)
            if len(shown) > SHOWN_ARGS:
                shown = shown[:SHOWN_ARGS] + "..."
            raise MCPError(types.INVALID_PARAMS,
                           f"not recorded: {params.name} was never called with {shown} in "
                           f"this recording of {recording.server!r} (it holds "
                           f"{recording.counts.get(params.name, 0)} recorded argument sets "
                           "for it)")
        result: types.CallToolResult = _result(record)
        return result

    offered = resource_handlers(recording) if (recording.resources or recording.templates
                                               or recording.reads) else {}
    if recording.prompts or recording.fetches:
        offered.update(prompt_handlers(recording))
    return Server(f"recording of {recording.server}", version="recorded",
                  instructions=f"A recording of server {recording.server!r}, served from "
                               f"{os.path.basename(recording.path)!r}: recorded arguments "
                               "only.",
                  on_list_tools=list_tools, on_call_tool=call_tool, **offered)


def serve_recording(journal: str | os.PathLike[str], server: str | None = None) -> Any:
    """A recording (a journal) as an MCP server that answers as the recorded server did.

    Args:
        journal: a journal file (``Bench(journal=...)``) that recorded the server.
        server: which recorded server (default: the only one; required when several).

    Returns:
        An MCP server object (the SDK's low-level ``Server``): connect it in process with
        ``bench.connect("name", server)``; ``toolbench serve-recording calls.sqlite``
        serves one over stdio (``--http PORT`` for streamable HTTP). It lists the tools of
        the journal's latest snapshot of the server, and answers each recorded argument set
        with its recorded result; likewise its resources, templates and prompts (each
        recorded read and prompt fetch answered as recorded). Anything else is refused with
        a message that says it was not recorded.

    Raises:
        ValueError: the journal is missing, a symlink, not a journal, or from a newer
            toolbench; it records several servers and ``server`` is not given; or it has no
            recording of ``server``.

    Example:
        >>> bench.connect("everything", tb.serve_recording("calls.sqlite"))  # doctest: +SKIP
    """
    return build_server(read_recording(journal, server))


def run_recording(journal: str | os.PathLike[str], server: str | None = None,
                  transport: Literal["stdio", "streamable-http"] = "stdio", *,
                  host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve a recording until stopped (blocks): stdio, or streamable HTTP at ``/mcp``."""
    import anyio

    from toolbench._transports.toolset.serve import HTTP_PATH, check_target, security_settings

    check_target(transport, host, port)
    srv = serve_recording(journal, server)

    async def stdio() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            await srv.run(read_stream, write_stream, srv.create_initialization_options())

    async def http() -> None:
        import uvicorn

        app = srv.streamable_http_app(streamable_http_path=HTTP_PATH, host=host,
                                      transport_security=security_settings(host, None, None))
        config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                                lifespan="on", log_config=None)
        await uvicorn.Server(config).serve()

    anyio.run(stdio if transport == "stdio" else http)


SERVE_HELP = ("serve a journal's recording of a server as an MCP server (stdio; --http PORT "
              "for streamable HTTP at /mcp): its recorded tools, resources and prompts, "
              "answering recorded argument sets, reads and fetches with the recorded results")


def add_cli(sub: Any) -> None:
    """``toolbench serve-recording JOURNAL [--server NAME] [--http PORT] [--host HOST]``."""
    p = sub.add_parser("serve-recording", help=SERVE_HELP, description=SERVE_HELP)
    p.add_argument("journal", metavar="JOURNAL", help="the journal file (calls.sqlite)")
    p.add_argument("--server", help="which recorded server (needed when it records several)")
    p.add_argument("--http", type=int, metavar="PORT",
                   help="serve streamable HTTP on this port instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="the HTTP host (default 127.0.0.1)")


def run_cli(args: Any) -> int:
    """Serve until stopped; a bad journal is a usage error (raised, exit status 2)."""
    read_recording(args.journal, args.server)  # refuse a bad journal before serving
    if args.http is None:
        run_recording(args.journal, args.server)
    else:
        run_recording(args.journal, args.server, "streamable-http", host=args.host,
                      port=args.http)
    return 0

"""Demo MCP server ``beyond``: the parts of MCP besides tools, offline and deterministic.

Run it over stdio with ``python -m toolbench.demo.beyond``, or in process with
``mcp.Client(create())``. It offers:

- resources: ``beyond://readme`` (text), ``beyond://cities.json`` (JSON), ``beyond://swatch.png``
  (a 16 × 16 PNG) and ``beyond://bytes.bin`` (256 bytes of binary); one resource template,
  ``city://{name}``;
- prompts: ``welcome`` (no arguments) and ``plan_trip`` (arguments), both multi-message;
- tools that return a resource link (``city_link``) and an embedded resource
  (``city_embedded``); tools that ask the client for sampling (``ask_llm``), elicitation
  (``ask_user``) and its roots (``client_roots``); a tool that logs at several levels
  (``chatty``) and one that reports progress (``countdown``).

Server-to-client requests go through the SDK's ``Resolve(...)`` markers (``Sample``, ``Elicit``,
``ListRoots``), not ``ctx.session.create_message``/``ctx.elicit``: on a 2026-07-28 connection
the SDK delivers them inside an ``InputRequiredResult`` and the client retries, while the direct
session calls fail there with ``NoBackChannelError``. The markers work on every protocol version.

The SDK has no server-side tasks (task-augmented ``tools/call``) in mcp 2.3: ``mcp_types``
defines the types only and says their methods are never dispatched. So no tool here requires
a task; server-everything's ``simulate-research-query`` is the real-world case.

Nothing here imports the rest of toolbench: the server must keep working while toolbench's
own modules move.
"""

from __future__ import annotations

import base64
import json
import struct
import warnings
import zlib
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import anyio
import mcp.types as types
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.server.mcpserver.resources.types import BinaryResource, TextResource
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import BaseModel, Field

NAME = "beyond"
INSTRUCTIONS = (
    "An offline demo server for the parts of MCP beyond tools: resources (text, JSON, a PNG, "
    "binary) and the template city://{name}; the prompts welcome and plan_trip; tools that "
    "return a resource link or an embedded resource; tools that ask the client to sample an "
    "LLM (ask_llm), to fill a form (ask_user) or for its roots (client_roots); a tool that logs "
    "at several levels (chatty) and one that reports progress (countdown)."
)

# A handful of cities, rounded; enough to make links, templates and prompts say something.
CITIES: dict[str, dict[str, Any]] = {
    "paris": {"name": "Paris", "country": "France", "lat": 48.8566, "lon": 2.3522,
              "population": 2_102_650},
    "tokyo": {"name": "Tokyo", "country": "Japan", "lat": 35.6762, "lon": 139.6503,
              "population": 14_094_034},
    "nairobi": {"name": "Nairobi", "country": "Kenya", "lat": -1.2921, "lon": 36.8219,
                "population": 4_397_073},
    "lima": {"name": "Lima", "country": "Peru", "lat": -12.0464, "lon": -77.0428,
             "population": 10_092_000},
    "sydney": {"name": "Sydney", "country": "Australia", "lat": -33.8688, "lon": 151.2093,
               "population": 5_450_496},
}

README = (
    "beyond: a demo MCP server.\n"
    "Read beyond://cities.json for the cities, city://<name> for one city "
    f"({', '.join(CITIES)}), beyond://swatch.png for an image and beyond://bytes.bin for "
    "binary data.\n"
)

LOG_LEVELS: tuple[types.LoggingLevel, ...] = ("debug", "info", "notice", "warning", "error")
"""The levels ``chatty`` logs at, lowest first (one message each, plus one structured)."""

MAX_STEPS = 10
MAX_DELAY_MS = 100
"""``countdown`` bounds: at most 10 steps of 100 ms, so a call never takes a second."""


def swatch_png(size: int = 16) -> bytes:
    """A size × size RGB gradient as PNG, built with zlib and struct only (no Pillow)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    step = 255 // max(1, size - 1)
    rows = b"".join(
        b"\x00" + b"".join(bytes((x * step, y * step, 160)) for x in range(size))
        for y in range(size)
    )
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def city(name: str) -> dict[str, Any]:
    """One city's record; an unknown name is an error that names it and the known ones."""
    key = name.strip().lower()
    if key not in CITIES:
        raise ValueError(f"unknown city {name[:100]!r}: the known cities are {', '.join(CITIES)}")
    return CITIES[key]


def city_json(name: str) -> str:
    return json.dumps(city(name), sort_keys=True)


ACTIVITIES = {"hiking": "Hiking", "museums": "Museums", "food": "Food and markets",
              "beaches": "Beaches", "nightlife": "Nightlife"}
"""The trip form's activities: value → the title a client shows."""


class Trip(BaseModel):
    """A trip to plan."""  # sent to the client as the form's description

    # One field of each kind elicitation allows: string, integer, number, enum (a single
    # choice), boolean, and a multi-select (an array of titled choices).

    destination: str = Field(description="Where to go.", max_length=100)
    nights: int = Field(description="How many nights.", ge=1, le=30)
    budget: float = Field(description="Budget in euros.", ge=0)
    travel_class: Literal["economy", "business", "first"] = Field(
        default="economy", description="Class of travel."
    )
    insurance: bool = Field(default=False, description="Buy travel insurance?")
    # Optional, and left out of the answer when not given (the answers of clients that do
    # not know the field stay as they were). MCP's titled multi-select: the client shows the
    # titles and sends the values.
    activities: list[Literal["hiking", "museums", "food", "beaches", "nightlife"]] | None = Field(
        default=None, min_length=1, max_length=3, description="What to do there (1 to 3).",
        exclude_if=lambda value: value is None,
        json_schema_extra={"items": {"anyOf": [
            {"const": value, "title": title} for value, title in ACTIVITIES.items()]}},
    )


class Answer(BaseModel):
    """What the user did with the form: the action, and the content only when accepted."""

    action: Literal["accept", "decline", "cancel"]
    content: Trip | None = None


class Reply(BaseModel):
    """The client's sampling reply, flattened: its text (or content type), model and role."""

    text: str
    model: str
    role: str
    stop_reason: str | None = None


class Root(BaseModel):
    uri: str
    name: str | None = None


def _ask_llm(question: str, max_tokens: int) -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=max_tokens,
        system_prompt="You are a concise travel assistant.",
    )


def _ask_trip(destination_hint: str) -> Elicit[Trip]:
    hint = f" (suggestion: {destination_hint})" if destination_hint else ""
    return Elicit(f"Plan a trip{hint}: where, how long, and how?", Trip)


def _ask_roots() -> ListRoots:
    return ListRoots()


async def _log(ctx: Context, level: types.LoggingLevel, data: Any) -> None:
    """Log through the SDK without its deprecation warning escaping into the caller.

    The SDK marks logging deprecated as of protocol 2026-07-28 (SEP-2577) but still delivers it
    (per request, when the client opts in with a level). ``typing_extensions.deprecated`` warns
    when the coroutine is created, so only that synchronous step runs with the warning muted;
    a test suite that turns warnings into errors would otherwise fail the tool.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        sending = ctx.session.send_log_message(
            level=level, data=data, logger=f"{NAME}.chatty", related_request_id=ctx.request_id
        )
    await sending


def create() -> MCPServer:
    """A fresh ``beyond`` server (also usable in process: ``mcp.Client(create())``)."""
    server = MCPServer(NAME, instructions=INSTRUCTIONS)

    server.add_resource(TextResource(
        uri="beyond://readme", name="readme", title="About this server",
        description="What this server offers, as plain text.", mime_type="text/plain",
        text=README,
    ))
    server.add_resource(TextResource(
        uri="beyond://cities.json", name="cities", title="All cities",
        description="Every city this server knows, as a JSON list.",
        mime_type="application/json",
        text=json.dumps([CITIES[key] for key in sorted(CITIES)], sort_keys=True),
    ))
    server.add_resource(BinaryResource(
        uri="beyond://swatch.png", name="swatch", title="Colour swatch",
        description="A 16 × 16 PNG gradient.", mime_type="image/png", data=swatch_png(),
    ))
    server.add_resource(BinaryResource(
        uri="beyond://bytes.bin", name="bytes", title="Every byte value",
        description="256 bytes, 0x00 to 0xff: binary data that is not text.",
        mime_type="application/octet-stream", data=bytes(range(256)),
    ))

    @server.resource("city://{name}", name="city", title="One city",
                     description="One city as JSON, by name.", mime_type="application/json")
    def city_resource(name: str) -> str:
        try:
            return city_json(name)
        except ValueError as exc:
            raise ResourceError(str(exc)) from exc

    @server.prompt(name="welcome", title="Welcome",
                   description="A short conversation introducing this server.")
    def welcome() -> list[Message]:
        return [
            UserMessage("What can this server do?"),
            AssistantMessage(
                "It serves resources (text, JSON, an image and binary data), this prompt and "
                "plan_trip, and tools that sample, elicit, log and report progress."
            ),
            UserMessage("Show me a city."),
            AssistantMessage(types.ResourceLink(
                type="resource_link", uri="city://paris", name="Paris",
                mime_type="application/json",
            )),
        ]

    @server.prompt(name="plan_trip", title="Plan a trip",
                   description="Ask an assistant to plan a trip between two known cities.")
    def plan_trip(from_city: str, to_city: str, days: str = "3") -> list[Message]:
        try:
            start, end = city(from_city), city(to_city)
            nights = int(days)
        except ValueError as exc:  # MCPError reaches the client as itself, not "Internal error"
            raise MCPError(types.INVALID_PARAMS, f"plan_trip: {exc}") from exc
        return [
            UserMessage(
                f"Plan a {nights}-day trip from {start['name']} to {end['name']}. "
                "Here is what we know about the destination:"
            ),
            UserMessage(types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri=f"city://{to_city.strip().lower()}", mime_type="application/json",
                    text=city_json(to_city),
                ),
            )),
            AssistantMessage(f"Day 1: fly from {start['name']} to {end['name']} and rest."),
            UserMessage("And the remaining days?"),
        ]

    @server.tool(name="city_link", title="Link to a city")
    def city_link(name: Annotated[str, Field(max_length=100)]) -> list[types.ContentBlock]:
        """A resource link to ``city://<name>``: read it with resources/read to get the JSON."""
        try:
            record = city(name)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        key = name.strip().lower()
        return [
            types.TextContent(type="text", text=f"{record['name']} is at city://{key}"),
            types.ResourceLink(
                type="resource_link", uri=f"city://{key}", name=record["name"],
                title=f"{record['name']}, {record['country']}",
                description=f"{record['name']} as JSON", mime_type="application/json",
            ),
        ]

    @server.tool(name="city_embedded", title="A city, embedded")
    def city_embedded(name: Annotated[str, Field(max_length=100)]) -> list[types.ContentBlock]:
        """The city's JSON embedded in the result, plus the swatch PNG as an embedded blob."""
        try:
            text = city_json(name)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        return [
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
                uri=f"city://{name.strip().lower()}", mime_type="application/json", text=text,
            )),
            types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
                uri="beyond://swatch.png", mime_type="image/png",
                blob=base64.b64encode(swatch_png()).decode("ascii"),
            )),
        ]

    @server.tool(name="ask_llm", title="Ask the client's LLM")
    async def ask_llm(
        question: Annotated[str, Field(max_length=2000)],
        reply: Annotated[types.CreateMessageResult, Resolve(_ask_llm)],
        max_tokens: Annotated[int, Field(ge=1, le=4000)] = 200,
    ) -> Reply:
        """Ask the client to sample its LLM with ``question``; returns the reply.

        Needs a client that supports sampling.
        """
        content = reply.content
        text = content.text if isinstance(content, types.TextContent) else f"[{content.type}]"
        return Reply(text=text, model=reply.model, role=reply.role,
                     stop_reason=reply.stop_reason)

    @server.tool(name="ask_user", title="Ask the user for a trip")
    async def ask_user(
        answer: Annotated[ElicitationResult[Trip], Resolve(_ask_trip)],
        destination_hint: Annotated[str, Field(max_length=100)] = "",
    ) -> Answer:
        """Ask the user (elicitation) for a trip: destination, nights, budget, class, insurance
        and activities (several of a list).

        Returns what the user did: accepted (with the answers), declined or cancelled.
        Needs a client that supports elicitation.
        """
        if answer.action == "accept":
            return Answer(action="accept", content=answer.data)
        return Answer(action=answer.action)

    @server.tool(name="client_roots", title="The client's roots")
    async def client_roots(
        roots: Annotated[types.ListRootsResult, Resolve(_ask_roots)],
    ) -> list[Root]:
        """The roots (folders) the client shares with servers. Needs a client that has roots."""
        return [Root(uri=str(root.uri), name=root.name) for root in roots.roots]

    @server.tool(name="chatty", title="Log at every level")
    async def chatty(ctx: Context) -> str:
        """Log one message at each of debug, info, notice, warning and error, then one structured.

        On protocol 2026-07-28 a client sees only the levels it opted in to (``log_level``);
        on older versions every level is sent.
        """
        for level in LOG_LEVELS:
            await _log(ctx, level, f"{level} message from chatty")
        await _log(ctx, "info", {"event": "structured", "cities": len(CITIES)})
        levels = ", ".join(LOG_LEVELS)
        return f"logged {len(LOG_LEVELS) + 1} messages: {levels} and a structured info"

    @server.tool(name="countdown", title="Count down with progress")
    async def countdown(
        ctx: Context,
        steps: Annotated[int, Field(ge=1, le=MAX_STEPS)] = 5,
        delay_ms: Annotated[int, Field(ge=0, le=MAX_DELAY_MS)] = 50,
    ) -> str:
        """Report progress ``1..steps`` of ``steps``, with a message, sleeping ``delay_ms`` each."""
        for done in range(1, steps + 1):
            await anyio.sleep(delay_ms / 1000)
            await ctx.report_progress(done, steps, f"step {done} of {steps}")
        return f"counted {steps} steps"

    add_live(server, CITIES)  # completions, and a resource that changes
    return server


# -- live parts: completions and a resource that changes ----------------------------------
# The plan_trip prompt's cities and the city://{name} template complete from the cities this
# server knows. beyond://note changes when set_note writes it, and subscribers hear of it:
# ``notifications/resources/updated`` on a handshake-era connection (whose
# ``resources/subscribe`` is answered here: the SDK's MCPServer answers subscriptions only on
# its 2026 listen streams, so they are registered on its low-level server), or a
# ``subscriptions/listen`` event on a 2026-07-28 one.
NOTE_URI = "beyond://note"
MAX_NOTE = 2_000


def add_live(server: MCPServer, cities: Mapping[str, Any]) -> None:
    """Add completions, ``beyond://note`` and ``set_note`` to ``server``."""
    note = {"text": "nothing yet"}
    subscribed: set[str] = set()

    @server.completion()  # type: ignore[no-untyped-call, untyped-decorator]
    async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
        if argument.name in ("from_city", "to_city", "name"):
            typed = str(argument.value).lower()
            values = [key for key in sorted(cities) if key.startswith(typed)]
            return types.Completion(values=values[:100], total=len(values),
                                    has_more=len(values) > 100)
        return types.Completion(values=[])

    @server.resource(NOTE_URI, name="note", title="A note that changes",
                     description="Whatever set_note last wrote.", mime_type="text/plain")
    def read_note() -> str:
        return note["text"]

    @server.tool(name="set_note", title="Change the note")
    async def set_note(text: Annotated[str, Field(max_length=MAX_NOTE)], ctx: Context) -> str:
        """Write ``text`` into beyond://note and tell whoever subscribed to it."""
        note["text"] = text
        await ctx.notify_resource_updated(NOTE_URI)  # 2026-07-28: listen streams
        if NOTE_URI in subscribed:  # handshake era: a notification on this session
            await ctx.session.send_resource_updated(NOTE_URI)
        return f"the note now says {text!r}"

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Any,
                          params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscribed.discard(str(params.uri))
        return types.EmptyResult()

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams,
                                 subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams,
                                 unsubscribe)


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    argparse.ArgumentParser(prog=f"python -m toolbench.demo.{NAME}",
                            description=INSTRUCTIONS).parse_args(argv)
    create().run("stdio")


if __name__ == "__main__":
    main()

"""Resource subscriptions and change streams of one MCP connection, on both protocol eras.

- **Handshake era (2025-11-25 and before).** ``resources/subscribe`` and
  ``resources/unsubscribe`` are requests; updates and list changes arrive as notifications
  through the SDK client's ``message_handler`` (the lifecycle hands them to
  :func:`on_notification`).
- **2026-07-28.** There are no such notifications: a client opens one
  ``subscriptions/listen`` stream (``mcp.client.subscriptions``, through ``Client.listen``)
  naming the list changes and resource URIs it wants. The filter is fixed per stream, so a
  (un)subscribe re-opens it with the new set of URIs (:class:`Listening`).

The URIs a user subscribed to belong to the ``McpClient`` (``_subscribed``), not to one
connection: after a reconnect they are subscribed again (:func:`resubscribe`, or the new
connection's stream, which names them all). An update becomes a ``bench.logs`` row of kind
``resource_updated`` (the URI as ``message`` and ``data``); a list change fires the
connection's coalesced ``Events`` (``toolbench._transports.mcp.events``).

What this module needs of the connection is declared here: :class:`Streams` (where events
and updates go, and the URIs), and for a (un)subscribe, :class:`Subscriber` (that, the
request envelope, and the current listen stream). ``McpClient`` is both.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolbench._core import html as _html
from toolbench._core.errors import Refused
from toolbench._transports.mcp.session import McpSession

if TYPE_CHECKING:
    from mcp import Client

    from toolbench._core.redact import Redactor
    from toolbench._transports.mcp.events import Events
    from toolbench._transports.mcp.methods.hints import ResponseCache
    from toolbench._transports.notifications import Notifications

logger = logging.getLogger(__name__)

MAX_URI_CHARS = 8192
"""A URI longer than this is refused before anything is sent."""
MAX_SUBSCRIPTIONS = 1_000
"""Resources one connection may be subscribed to (each costs the server, and a stream)."""
RELISTEN_TRIES = 3
"""How often a 2026 stream that dropped while the connection stays up is opened again."""
RELISTEN_WAIT_S = 1.0
"""The pause before such a re-open (doubling each time)."""


class Streams(Protocol):
    """What the change streams use of a connection: where events and updates go, the URIs
    subscribed to (the client's, kept across reconnects), its secrets and its timeout."""

    name: str
    _subscribed: set[str]
    _events: Events
    responses: ResponseCache
    _notifications: Notifications | None
    _redact: Redactor
    _timeout: float


class Subscriber(McpSession, Streams, Protocol):
    """What a (un)subscribe uses: the streams, the request envelope, and the listen stream."""

    def _listening(self) -> tuple[Listening, anyio.abc.TaskGroup] | None:
        """The live connection's 2026 listen stream and task group; None without one."""
        ...


def is_modern(client: Client) -> bool:
    """True on a 2026-07-28 connection (``subscriptions/listen``, no notifications)."""
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


def check_uri(server: str, uri: object) -> str:
    """The URI, or ``Refused`` (nothing sent) naming the value and the rule."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS or "://" not in uri:
        shown = _html.shorten(repr(uri), 120)
        raise Refused(f"cannot subscribe {server!r} to {shown}: a resource URI is a non-empty "
                      f"str with a scheme (scheme://...), at most {MAX_URI_CHARS} characters; "
                      "nothing was sent")
    return uri


def resource_updated(mcp: Streams, uri: Any) -> None:
    """Log one update as a ``bench.logs`` row (kind ``resource_updated``); a cached read
    of it is stale at once."""
    mcp.responses.updated(str(uri))
    if mcp._notifications is None:
        return
    text = _html.shorten(str(uri), 2_000)
    mcp._notifications.add(mcp.name, "resource_updated", message=text, data={"uri": text})


def on_notification(mcp: Streams, task_group: anyio.abc.TaskGroup | None,
                    client: Client | None, message: Any) -> None:
    """A handshake-era notification: a list change fires its listeners, an update is logged.

    On a 2026 connection the SDK also hands the listen stream's events to the message
    handler as notifications; there the stream (:class:`Listening`) is the one source, so
    nothing is counted twice.
    """
    if client is not None and is_modern(client):
        return
    if isinstance(message, types.ToolListChangedNotification):
        mcp._events.fire("tools", task_group)
    elif isinstance(message, types.ResourceListChangedNotification):
        mcp._events.fire("resources", task_group)
    elif isinstance(message, types.PromptListChangedNotification):
        mcp._events.fire("prompts", task_group)
    elif isinstance(message, types.ResourceUpdatedNotification):
        resource_updated(mcp, message.params.uri)


def _on_event(mcp: Streams, task_group: anyio.abc.TaskGroup, event: Any) -> None:
    if isinstance(event, ToolsListChanged):
        mcp._events.fire("tools", task_group)
    elif isinstance(event, ResourcesListChanged):
        mcp._events.fire("resources", task_group)
    elif isinstance(event, PromptsListChanged):
        mcp._events.fire("prompts", task_group)
    elif isinstance(event, ResourceUpdated):
        resource_updated(mcp, event.uri)


class Listening:
    """One 2026 connection's ``subscriptions/listen`` stream, re-opened when the URIs change.

    It runs in the connection's task group for the connection's life. ``honored`` holds the
    URIs the server acknowledged on the current stream; ``changed`` is set at each ack (or
    when the stream ends), so a (un)subscribe can wait for its own filter to take effect.
    """

    def __init__(self, mcp: Streams, client: Client) -> None:
        self._mcp, self._client = mcp, client
        caps = client.server_capabilities
        self._tools = bool(caps.tools and caps.tools.list_changed)
        self._prompts = bool(caps.prompts and caps.prompts.list_changed)
        self._resources = bool(caps.resources and caps.resources.list_changed)
        self._scope: anyio.CancelScope | None = None
        self._reopen = False
        self.honored: frozenset[str] = frozenset()
        self.ended: str | None = None
        self.changed = anyio.Event()
        self.running = False

    def wanted(self) -> bool:
        """Whether a stream is worth opening (a list change or a URI to hear about)."""
        return self._tools or self._prompts or self._resources or bool(self._mcp._subscribed)

    def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Open the stream (again) with the client's current URIs (called on the loop)."""
        self.changed = anyio.Event()
        if self.running:
            self._reopen = True
            if self._scope is not None:
                self._scope.cancel()
            return
        self.running = True
        task_group.start_soon(self.run, task_group)

    def _acked(self, honored: frozenset[str]) -> None:
        self.honored = honored
        self.changed.set()

    async def run(self, task_group: anyio.abc.TaskGroup) -> None:
        self.running = True
        try:
            await self._run(task_group)
        finally:
            self.running = False
            self.honored = frozenset()
            self.changed.set()

    async def _run(self, task_group: anyio.abc.TaskGroup) -> None:
        tries = 0
        while True:
            self._reopen = False
            uris = sorted(self._mcp._subscribed)
            with anyio.CancelScope() as self._scope:
                try:
                    async with self._client.listen(
                        tools_list_changed=self._tools, prompts_list_changed=self._prompts,
                        resources_list_changed=self._resources,
                        resource_subscriptions=uris,
                    ) as subscription:
                        tries = 0
                        honored = subscription.honored.resource_subscriptions or ()
                        self._acked(frozenset(honored))
                        async for event in subscription:
                            _on_event(self._mcp, task_group, event)
                    self.ended = "the server closed the subscriptions/listen stream"
                except SubscriptionLost as exc:
                    self.ended = f"the subscriptions/listen stream was lost: {exc}"
                    tries += 1
                except Exception as exc:  # listening is a courtesy; calls go on without it
                    logger.debug("subscriptions/listen for %s ended: %r", self._mcp.name, exc)
                    self.ended = (f"subscriptions/listen failed: "
                                  f"{_html.shorten(self._mcp._redact(str(exc)), 300)}")
                    tries = RELISTEN_TRIES
            self._scope = None
            if self._reopen:
                continue
            if tries == 0 or tries >= RELISTEN_TRIES:
                return
            await anyio.sleep(RELISTEN_WAIT_S * 2 ** (tries - 1))


async def _request(client: Client, request: Any) -> None:
    # The session's own request: the Client's wrappers warn that these are deprecated
    # as of 2026-07-28, and they are sent only to handshake-era servers.
    await client.session.send_request(request, types.EmptyResult)


async def subscribe(mcp: Subscriber, server: str, uri: object, *,
                    timeout: float | None = None) -> None:
    """Subscribe ``server`` (this client's) to ``uri``; see :meth:`McpClient.subscribe`."""
    mcp.check_server(server)
    uri = check_uri(server, uri)
    if uri not in mcp._subscribed and len(mcp._subscribed) >= MAX_SUBSCRIPTIONS:
        raise Refused(f"server {server!r} already has {MAX_SUBSCRIPTIONS:,} subscriptions; "
                      "unsubscribe some first (nothing was sent)")

    async def send(client: Client) -> None:
        caps = client.server_capabilities.resources
        if caps is None or not caps.subscribe:
            raise Refused(f"server {server!r} does not offer resource subscriptions (its "
                          "capabilities say resources.subscribe is not supported); nothing "
                          "was sent")
        if is_modern(client):
            fresh = uri not in mcp._subscribed
            mcp._subscribed.add(uri)
            try:
                await _refilter(mcp, server, uri, subscribing=True)
            except BaseException:
                if fresh:  # not taken: it is not subscribed (nor after a reconnect)
                    mcp._subscribed.discard(uri)
                raise
            return
        await _request(client, types.SubscribeRequest(
            params=types.SubscribeRequestParams(uri=uri)))
        mcp._subscribed.add(uri)

    await mcp.request("resources/subscribe", send, timeout=timeout, offers="resources")


async def unsubscribe(mcp: Subscriber, server: str, uri: object, *,
                      timeout: float | None = None) -> None:
    """Undo :func:`subscribe`; a URI never subscribed is ``Refused`` (nothing sent)."""
    mcp.check_server(server)
    uri = check_uri(server, uri)
    if uri not in mcp._subscribed:
        raise Refused(f"server {server!r} is not subscribed to {_html.shorten(uri, 200)!r}; "
                      f"subscribed: {sorted(mcp._subscribed)[:10]} (nothing was sent)")

    async def send(client: Client) -> None:
        mcp._subscribed.discard(uri)
        if is_modern(client):
            await _refilter(mcp, server, uri, subscribing=False)
            return
        await _request(client, types.UnsubscribeRequest(
            params=types.UnsubscribeRequestParams(uri=uri)))

    await mcp.request("resources/unsubscribe", send, timeout=timeout, offers="resources")


async def _refilter(mcp: Subscriber, server: str, uri: str, *, subscribing: bool) -> None:
    """Re-open the connection's listen stream and wait for its acknowledgment."""
    live = mcp._listening()
    if live is None:
        if subscribing:
            raise Refused(f"server {server!r} has no subscriptions/listen stream to carry the "
                          "subscription")
        return
    listening, task_group = live
    listening.ended = None
    listening.start(task_group)
    await listening.changed.wait()
    if subscribing and uri not in listening.honored:
        why = listening.ended or "the server did not acknowledge it"
        raise Refused(f"server {server!r} did not take the subscription to "
                      f"{_html.shorten(uri, 200)!r}: {why}")


async def resubscribe(mcp: Streams, client: Client) -> None:
    """After a reconnect, subscribe a handshake-era server to every URI again (bounded).

    A 2026 connection needs nothing: its stream already names them all. A URI the server
    refuses now stays in the set (the next reconnect tries again) and is logged.
    """
    if is_modern(client) or not mcp._subscribed:
        return
    for uri in sorted(mcp._subscribed):
        try:
            with anyio.fail_after(mcp._timeout):
                await _request(client, types.SubscribeRequest(
                    params=types.SubscribeRequestParams(uri=uri)))
        except Exception as exc:
            logger.warning("resubscribing %s to %s failed: %r", mcp.name, uri, exc)
            if mcp._notifications is not None:
                mcp._notifications.add(mcp.name, "log", level="warning", logger="toolbench",
                                       message=f"resubscribing to {_html.shorten(uri, 200)} "
                                               f"after a reconnect failed: "
                                               f"{_html.shorten(mcp._redact(str(exc)), 300)}")

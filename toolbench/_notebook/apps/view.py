"""``AppView``: a tool's own MCP App view, live in an output cell (DESIGN.md, "MCP Apps").

The widget is a frame and a relay; every decision is the bench's
(:class:`~toolbench._bench.apps.bridge.Bridge`). Its ES module (``view.js``, in the package)
renders ``<iframe sandbox="allow-scripts" srcdoc=...>`` and speaks this comm protocol:

* front → kernel: ``{"kind": "rpc", "message": <obj>}`` for each message the frame posted
  (only when ``event.source`` is this view's frame), ``{"kind": "context",
  "theme": "light" | "dark", "width": <px>, "height": <px, fullscreen only>}`` at first and
  whenever one changes (debounced), with ``"mode": "inline"`` when the person closes
  fullscreen (or it cannot be shown), and ``{"kind": "teardown",
  "state": "sent" | "unanswered" | "gone", "id": ...}`` as it tears the view down (the view's
  answer itself comes as an ``rpc`` message), so ``view.log`` shows the teardown and its outcome;
  ``{"kind": "navigated", "how": ...}`` when the view left its document (the front end has
  removed the frame) and ``{"kind": "refused", "id", "bytes", "why"}`` for a message it
  answered -32600 itself (over the 4 MB bound: it never reaches the comm);
* kernel → front: ``{"kind": "rpc", "message": <obj>}``, posted into the frame, and
  ``{"kind": "teardown"}``: the front sends ``ui/resource-teardown`` and removes the frame
  after 2 s (sooner if the view answers).

Clearing the output, re-running the cell and closing the widget tear the view down from the
front end: JupyterLab removes the output's DOM before the widget's cleanup runs, so
``view.js`` keeps the frame's document alive across that removal (its comment says how) and
sends ``ui/resource-teardown`` to that live document, never to a reloaded one.

A message from the front is answered on toolbench's shared loop, never on the kernel's
thread, so a slow ``tools/call`` from a view does not hold the kernel.
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.apps.bridge import Bridge

_ESM = pathlib.Path(__file__).with_name("view.js")


class AppView(anywidget.AnyWidget):  # type: ignore[misc]
    """A live MCP App view: the server's HTML framed under the bench's policy."""

    _esm = _ESM
    html = traitlets.Unicode("").tag(sync=True)
    """The document as framed (the CSP ``<meta>`` first)."""
    sandbox = traitlets.Unicode("allow-scripts").tag(sync=True)
    allow = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Int(360).tag(sync=True)
    border = traitlets.Bool(False).tag(sync=True)
    links = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """URLs the view asked to open: shown under it, never opened."""
    display_mode = traitlets.Unicode("inline").tag(sync=True)
    """``inline``, or ``fullscreen`` (the view fills the main area or the window) while the
    view asked for it and the person has not closed it."""

    def __init__(self, bridge: Bridge) -> None:
        policy = bridge.policy
        super().__init__(html=bridge.html, sandbox="allow-scripts", allow=policy.allow,
                         height=bridge.height, border=policy.prefers_border)
        self.bridge = bridge
        self.uri, self.server, self.tool = bridge.uri, bridge.server, bridge.tool
        self.csp = policy.csp
        self.warnings = list(policy.warnings)
        bridge.post = self._post
        bridge.on_event = self._on_event
        self.on_msg(self._on_front)

    # -- what a person or a test reads -------------------------------------------------------
    @property
    def log(self) -> pd.DataFrame:
        """The traffic both ways: ``time``, ``direction``, ``method``, ``id``, ``ok``,
        ``error`` (capped)."""
        return self.bridge.log

    @property
    def messages(self) -> list[dict[str, Any]]:
        """What the view sent with ``ui/message`` (the newest kept)."""
        return list(self.bridge.messages)

    @property
    def context(self) -> dict[str, Any] | None:
        """What the view last sent with ``ui/update-model-context``."""
        return self.bridge.context

    def handle(self, message: Any) -> dict[str, Any] | None:
        """Answer one JSON-RPC message as if the frame had sent it; the reply or None."""
        return self.bridge.handle(message)

    async def ahandle(self, message: Any) -> dict[str, Any] | None:
        """Awaitable :meth:`handle`."""
        return await self.bridge.ahandle(message)

    def close(self) -> None:
        """Tear the view down (``ui/resource-teardown``, the frame goes after 2 s), then
        close the widget."""
        loop = get_loop()
        try:
            if not loop.in_loop_thread():  # the bridge tells the front (its post is set)
                loop.run(self.bridge.teardown)
        except Exception:  # a stopped loop: the frame goes with the widget
            pass
        finally:
            super().close()

    def __repr__(self) -> str:
        return (f"<AppView {self.uri} of {self.server}/{self.tool}: a live MCP App view; it "
                "needs a running notebook kernel and front end to show>")

    # -- the relay ---------------------------------------------------------------------------
    def _post(self, message: dict[str, Any]) -> None:
        self._post_kind({"kind": "rpc", "message": message})

    def _post_kind(self, content: dict[str, Any]) -> None:
        if self.comm is not None:
            self.send(content)

    def _on_event(self, kind: str, value: Any) -> None:
        if kind == "height":
            self.height = int(value)
        elif kind == "link":
            self.links = [*self.links[-99:], str(value)]
        elif kind == "teardown":
            self._post_kind({"kind": "teardown"})
        elif kind == "display-mode":
            self.display_mode = str(value)

    def _on_front(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or self._front_guard(content):
            return
        if content.get("kind") == "context":  # checked there; a change reaches the view
            self.bridge.context_changed(theme=content.get("theme"), width=content.get("width"),
                                        height=content.get("height"), mode=content.get("mode"))
        elif content.get("kind") == "teardown":
            self.bridge.told_teardown(content.get("state"), content.get("id"))
        elif content.get("kind") == "rpc":
            message = content.get("message")
            if not self.bridge.backlog.admit(message):  # too many notifications waiting
                return
            future = get_loop().submit(lambda: self.bridge.answer_queued(message))
            future.add_done_callback(self._answered)

    def _front_guard(self, content: dict[str, Any]) -> bool:
        """The front end's own guards (issue 43): it ended a view that left its document,
        or refused a message too big for the comm. True when ``content`` was one of those."""
        if content.get("kind") == "navigated":
            self.bridge.told_navigated(content.get("how"))
        elif content.get("kind") == "refused":
            self.bridge.told_refused(content.get("id"), content.get("why"))
        else:
            return False
        return True

    def _answered(self, future: Any) -> None:
        try:
            reply = future.result()
        except BaseException:  # cancelled at shutdown: the frame is gone
            return
        if reply is not None:
            self._post(reply)


class ViewWarmUp(anywidget.AnyWidget):  # type: ignore[misc]
    """The first view's warm-up (issue 46): a widget that is never displayed.

    Made once per kernel (``toolbench._notebook.view_warmup``) when a server with views
    connects. Its comm makes the page load ``view.js`` through anywidget (the same module a
    view runs), and ``view.js``'s ``initialize`` then keeps one hidden, empty sandboxed frame
    in the page, so the browser has the process a view's frame runs in before the first view
    needs it. It carries nothing of any server's: only ``warm`` and the module."""

    _esm = _ESM
    warm = traitlets.Bool(True).tag(sync=True)

    def __repr__(self) -> str:
        return "<ViewWarmUp: readies the page for MCP App views; it shows nothing>"


def make_view(bridge: Bridge) -> AppView:
    """The factory the notebook layer registers for ``result.app``."""
    return AppView(bridge)

"""``"ask"``: the sampling and elicitation widgets, and the cell-side pump.

The widget tests drive ipywidgets state directly (no kernel, no browser): the asker is given
a ``display`` that collects widgets, the test plays the main thread (``service``), sets
values and clicks buttons, and the request on the shared loop gets the answer. The slow tests
run a real ipykernel through jupyter_client, with the test playing JupyterLab: a cell blocks
in a plain ``bench.call``, and the test answers the form with comm messages, as the frontend
would. tests/test_browser_ask.py does the same in a real JupyterLab in Chromium.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import mcp.types as t
import pytest

import toolbench as tb
from toolbench import _loop
from toolbench._core.schema import preload as _preload
from toolbench._loop import get_loop
from toolbench._notebook.ask import ask as ask_mod
from toolbench._notebook.ask import pump, widgets
from toolbench._notebook.ask.ask import NotebookAsker, wait_answered
from toolbench._notebook.ask.widgets import ElicitationAsk, SamplingAsk
from toolbench._transports import server_requests as sr

ROOT = Path(__file__).resolve().parents[1]
TRIP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "destination": {"type": "string", "maxLength": 100, "description": "Where to go."},
        "nights": {"type": "integer", "minimum": 1, "maximum": 30},
        "budget": {"type": "number", "minimum": 0},
        "travel_class": {"type": "string", "enum": ["economy", "business", "first"],
                         "default": "economy"},
        "insurance": {"type": "boolean", "default": False},
    },
    "required": ["destination", "nights", "budget"],
}


def form_params(schema: dict[str, Any] | None = None, message: str = "Plan a trip"
                ) -> t.ElicitRequestFormParams:
    return t.ElicitRequestFormParams(message=message, requested_schema=schema or TRIP_SCHEMA)


def sampling_params(count: int = 1, text: str = "Which city is hottest?"
                    ) -> t.CreateMessageRequestParams:
    return t.CreateMessageRequestParams(
        messages=[t.SamplingMessage(role="user", content=t.TextContent(type="text", text=text))
                  for _ in range(count)],
        max_tokens=50, system_prompt="be brief")


@pytest.fixture
def asker() -> Iterator[tuple[NotebookAsker, list[Any]]]:
    shown: list[Any] = []
    previous = sr.registered_asker()
    made = NotebookAsker(display=shown.append)
    sr.register_asker(made)
    yield made, shown
    sr.register_asker(previous)


def start(requests: sr.ServerRequests, kind: str, params: Any) -> Future[Any]:
    """Send one request to the bench's handler on the shared loop (as the SDK would)."""
    if kind == "sampling":
        return get_loop().submit(lambda: requests.answer_sampling("beyond", params))
    return get_loop().submit(lambda: requests.answer_elicitation("beyond", params))


def html_of(widget: Any) -> str:
    """Every HTML value in a widget tree (what a person would read)."""
    found: list[str] = []
    stack = [widget]
    while stack:
        current = stack.pop()
        if type(current).__name__ == "HTML":
            found.append(current.value)
        stack.extend(getattr(current, "children", ()))
    return "\n".join(found)


# -- elicitation ------------------------------------------------------------------------------
def test_form_accept_returns_checked_content(asker: tuple[NotebookAsker, list[Any]]) -> None:
    made, shown = asker
    requests = sr.ServerRequests(elicitation="ask")
    future = start(requests, "elicitation", form_params())
    (view,) = wait_answered(made)
    assert isinstance(view, ElicitationAsk) and shown == [view.widget]
    assert not future.done()
    view.form["destination"].value = "Lima"
    view.form["nights"].value = 4
    view.form["budget"].value = 1234.5
    view.form["insurance"].value = True
    view.accept.click()
    reply = future.result(timeout=10)
    assert isinstance(reply, t.ElicitResult) and reply.action == "accept"
    assert reply.content == {"destination": "Lima", "nights": 4, "budget": 1234.5,
                             "travel_class": "economy", "insurance": True}
    assert all(button.disabled for button in view.buttons)
    assert "accepted" in view.status.value
    view.decline.click()  # a second click changes nothing
    assert made.service() == 0


def test_invalid_input_is_marked_and_nothing_is_sent(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    made, _ = asker
    requests = sr.ServerRequests(elicitation="ask")
    future = start(requests, "elicitation", form_params())
    (view,) = wait_answered(made)
    view.form["destination"].value = "Lima"
    view.form["nights"].value = 99  # maximum 30
    view.form["budget"].value = 1.0
    view.accept.click()
    time.sleep(0.2)
    assert not future.done()
    assert "nothing was sent" in view.status.value
    assert "30" in view.form.fields["nights"].error.value
    view.form["nights"].value = 3
    view.accept.click()
    assert future.result(timeout=10).content["nights"] == 3


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel(asker: tuple[NotebookAsker, list[Any]], action: str) -> None:
    made, _ = asker
    future = start(sr.ServerRequests(elicitation="ask"), "elicitation", form_params())
    (view,) = wait_answered(made)
    getattr(view, action).click()
    reply = future.result(timeout=10)
    assert reply.action == action and reply.content is None


def test_hostile_text_is_escaped(asker: tuple[NotebookAsker, list[Any]]) -> None:
    made, _ = asker
    schema = {"type": "object", "properties": {"x": {
        "type": "string", "description": "<script>alert(1)</script>"}}}
    start(sr.ServerRequests(elicitation="ask"), "elicitation",
          form_params(schema, message="<img src=x onerror=alert(1)>"))
    (view,) = wait_answered(made)
    text = html_of(view.widget)
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "<script>" not in text
    view.cancel.click()


def test_a_remote_ref_is_not_fetched_and_the_form_says_why(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    made, _ = asker
    schema = {"type": "object", "properties": {
        "x": {"$ref": "https://evil.example/x.json"}, "y": {"type": "string"}}}
    future = start(sr.ServerRequests(elicitation="ask"), "elicitation", form_params(schema))
    (view,) = wait_answered(made)
    text = html_of(view.widget)
    assert "not fully checked here" in text and "https://evil.example/x.json" in text
    view.form["y"].value = "ok"
    view.accept.click()
    assert future.result(timeout=10).content == {"y": "ok"}


def test_a_pathological_pattern_is_judged_in_linear_time(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    made, _ = asker
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}},
              "required": ["code"]}
    future = start(sr.ServerRequests(elicitation="ask"), "elicitation", form_params(schema))
    (view,) = wait_answered(made)
    view.form["code"].value = "a" * 50 + "b"
    _preload.start().result(timeout=120)  # jsonschema's first import is not timed
    started = time.monotonic()
    view.accept.click()
    assert time.monotonic() - started < 2  # Python's re would take hours
    assert "pattern" in view.form.fields["code"].error.value or "match" in \
        view.form.fields["code"].error.value
    assert not future.done()
    view.form["code"].value = "aaa"
    view.accept.click()
    assert future.result(timeout=10).content == {"code": "aaa"}


def test_a_pattern_re2_cannot_run_is_skipped_and_the_form_says_why(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    made, _ = asker
    schema = {"type": "object", "properties": {"code": {"type": "string",
                                                        "pattern": r"^(a)\1$"}}}
    start(sr.ServerRequests(elicitation="ask"), "elicitation", form_params(schema))
    (view,) = wait_answered(made)
    assert "not fully checked here" in html_of(view.widget)
    assert "pattern" in html_of(view.widget)
    view.cancel.click()


def test_url_elicitation_shows_an_escaped_link_and_opens_nothing(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    made, _ = asker
    params = t.ElicitRequestURLParams(message="Sign in", url="https://auth.example/x?a=1&b=\"2\"",
                                      elicitation_id="e1")
    future = start(sr.ServerRequests(elicitation="ask"), "elicitation", params)
    (view,) = wait_answered(made)
    text = html_of(view.widget)
    assert 'href="https://auth.example/x?a=1&amp;b=&quot;2&quot;"' in text
    assert 'rel="noopener noreferrer nofollow"' in text and "nothing is opened" in text
    assert view.form is None
    view.accept.click()
    reply = future.result(timeout=10)
    assert reply.action == "accept" and reply.content is None
    evil = widgets.safe_link("javascript:alert(1)")
    assert "href" not in evil and "not an http(s) link" in evil


# -- sampling ------------------------------------------------------------------------------
def test_sampling_send_and_reject(asker: tuple[NotebookAsker, list[Any]]) -> None:
    made, _ = asker
    requests = sr.ServerRequests(sampling="ask")
    future = start(requests, "sampling", sampling_params())
    (view,) = wait_answered(made)
    assert isinstance(view, SamplingAsk)
    assert "Which city is hottest?" in view.transcript.value and "be brief" in \
        view.transcript.value
    view.send.click()  # empty: refused, nothing sent
    assert not future.done() and "write a reply" in view.status.value
    view.reply.value = "Nairobi is not; try Lima."
    view.send.click()
    reply = future.result(timeout=10)
    assert isinstance(reply, t.CreateMessageResult)
    assert reply.content.text == "Nairobi is not; try Lima."  # type: ignore[union-attr]
    assert reply.model == "toolbench-human" and reply.role == "assistant"

    future = start(requests, "sampling", sampling_params())
    (view,) = wait_answered(made)
    view.reject.click()
    refused = future.result(timeout=10)
    assert isinstance(refused, t.ErrorData) and refused.code == sr.USER_REJECTED
    assert "rejected" in refused.message


def test_ten_thousand_messages_render_bounded_and_escaped(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    made, _ = asker
    params = sampling_params(10_000, text="<script>alert('x')</script>" + "y" * 5_000)
    started = time.monotonic()
    html = widgets.sampling_html("beyond", params)
    assert time.monotonic() - started < 1.0
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "9,980 earlier messages not shown (10,000 in all)" in html
    assert html.count("&lt;script&gt;") == widgets.MAX_SHOWN_MESSAGES
    assert len(html) < 60_000  # 20 messages of at most 2,000 characters, plus markup
    start(sr.ServerRequests(sampling="ask"), "sampling", params)
    (view,) = wait_answered(made)
    view.reject.click()


# -- bounds --------------------------------------------------------------------------------
def test_an_unanswered_ask_expires_and_the_server_gets_an_error(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    made, _ = asker
    requests = sr.ServerRequests(elicitation="ask", ask_timeout=0.5)
    future = start(requests, "elicitation", form_params())
    (view,) = wait_answered(made)
    reply = future.result(timeout=10)
    assert isinstance(reply, t.ErrorData) and "nobody answered" in reply.message
    assert made.service() == 0  # the main thread settles the expired widget
    assert all(button.disabled for button in view.buttons)
    assert "ended before it was answered" in view.status.value


def test_too_many_open_asks_are_refused(asker: tuple[NotebookAsker, list[Any]]) -> None:
    made, _ = asker
    requests = sr.ServerRequests(elicitation="ask")
    futures = [start(requests, "elicitation", form_params()) for _ in range(sr.MAX_OPEN_ASKS)]
    views = wait_answered(made, sr.MAX_OPEN_ASKS)
    extra = start(requests, "elicitation", form_params()).result(timeout=10)
    assert isinstance(extra, t.ErrorData) and "already waiting" in extra.message
    for view in views:
        view.cancel.click()
    assert [f.result(timeout=10).action for f in futures] == ["cancel"] * sr.MAX_OPEN_ASKS


def test_the_wait_hook_outside_a_kernel_is_a_plain_wait() -> None:
    made = NotebookAsker(kernel=lambda: None)
    lock = threading.Lock()
    lock.acquire()
    threading.Timer(0.1, lock.release).start()
    started = time.monotonic()
    made.wait(lock)
    assert 0.05 < time.monotonic() - started < 5
    assert made.available() == "this process is not a Jupyter kernel"


def test_the_module_registers_the_process_asker_and_prepare_installs_its_hook() -> None:
    # ``import toolbench`` registered this module's asker for "ask" (the fixture above swaps
    # it only inside a test).
    assert sr.registered_asker() is ask_mod.ASKER
    assert ask_mod.ASKER.available() == "this process is not a Jupyter kernel"
    previous = _loop._wait_hook
    try:
        _loop.set_wait_hook(None)
        ask_mod.ASKER.prepare()  # no kernel here: synchronous calls keep the plain wait
        assert _loop._wait_hook is None
        made = NotebookAsker(kernel=lambda: object())  # a "kernel" without any plumbing
        made.prepare()
        assert _loop._wait_hook == made.wait
        # and the hook is what a synchronous call then waits through
        seen: list[threading.Lock] = []

        def spy(done: threading.Lock) -> None:
            seen.append(done)
            made.wait(done)

        _loop.set_wait_hook(spy)

        async def answer() -> int:
            await asyncio.sleep(0.05)
            return 42

        assert get_loop().run(answer) == 42 and len(seen) == 1
    finally:
        _loop.set_wait_hook(previous)


class _FakeKernel:
    """Only what answer_comm_status touches: a session and a status publisher."""

    def __init__(self) -> None:
        from jupyter_client.session import Session

        self.session = Session(key=b"k")
        self.published: list[tuple[str, str]] = []
        self.dispatched: list[bool] = []

    def _publish_status(self, status: str, channel: str, parent: Any = None) -> None:
        self.published.append((status, (parent or {}).get("header", {}).get("msg_id", "")))

    async def dispatch_shell(self, msg: Any, /, subshell_id: str | None = None, *,
                             concurrent: bool = False) -> None:
        self.dispatched.append(concurrent)

    def frames(self, kind: str) -> tuple[str, list[Any]]:
        """A message as the kernel's stream hands it over (zmq frames, not copied)."""
        import zmq

        message = self.session.msg(kind, {"comm_id": "c", "data": {}})
        return (message["header"]["msg_id"],
                [zmq.Frame(part) for part in self.session.serialize(message)])


def test_a_comm_message_dispatched_while_a_cell_awaits_gets_busy_and_idle() -> None:
    """ipykernel 7 dispatches a comm message during an awaiting cell with concurrent=True,
    which publishes no status; ipywidgets then holds back the widget's next change forever.
    The wrapper adds busy/idle parented to that message, and only there."""
    kernel = _FakeKernel()
    assert pump.answer_comm_status(kernel) is True
    assert pump.answer_comm_status(kernel) is True  # once: not wrapped twice
    comm_id, comm_frames = kernel.frames("comm_msg")
    _, execute_frames = kernel.frames("execute_request")
    asyncio.run(kernel.dispatch_shell(comm_frames, concurrent=True))
    assert kernel.published == [("busy", comm_id), ("idle", comm_id)]
    asyncio.run(kernel.dispatch_shell(comm_frames))  # not concurrent: the kernel's own
    asyncio.run(kernel.dispatch_shell(execute_frames, concurrent=True))  # not a comm
    asyncio.run(kernel.dispatch_shell([b"garbage"], concurrent=True))  # (its own problem)
    assert kernel.published == [("busy", comm_id), ("idle", comm_id)]
    assert kernel.dispatched == [True, False, True, True]  # every message still dispatched
    # A kernel whose dispatch_shell knows no "concurrent" (not ipykernel 7) is left alone.
    older = _FakeKernel()

    async def plain(msg: Any) -> None:
        return None

    older.dispatch_shell = plain  # type: ignore[assignment,method-assign]
    assert pump.answer_comm_status(older) is False and older.dispatch_shell is plain


def test_a_kernel_without_the_plumbing_gives_pump_unavailable() -> None:
    class Bare:
        shell_stream = None

    with pytest.raises(pump.PumpUnavailable):
        pump.KernelPump(Bare())


def test_accept_settles_so_a_value_sent_with_the_click_counts(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    """A box's value and the click on Accept leave the page together; the kernel may run the
    click first (an awaiting cell runs each widget message as its own task). Accept decides
    SETTLE_S later, reading the form then; clicks meanwhile are ignored."""
    made, _ = asker
    future = start(sr.ServerRequests(elicitation="ask"), "elicitation", form_params())
    (view,) = wait_answered(made)
    with made.pumping():  # as while a blocked cell pumps: settling clicks wait for its slices
        view.form["destination"].value = "Lim"
        view.form["nights"].value = "-3"
        view.form["budget"].value = "10"
        view.accept.click()
        assert view.settling and made.run_deferred() == 0  # not due yet
        view.form["destination"].value = "Lima"  # arrived just after the click
        view.form["nights"].value = "5"
        view.decline.click()  # ignored while Accept settles
        assert made.run_deferred(now=time.monotonic() + ask_mod.SETTLE_S + 0.01) == 1
    reply = future.result(timeout=10)
    assert reply.action == "accept" and reply.content is not None
    assert (reply.content["destination"], reply.content["nights"]) == ("Lima", 5)
    # Send settles too; Reject (which reads nothing) does not.
    future = start(sr.ServerRequests(sampling="ask"), "sampling", sampling_params())
    (sampling,) = [v for v in wait_answered(made) if isinstance(v, SamplingAsk)]
    with made.pumping():
        sampling.reply.value = "Go in"
        sampling.send.click()
        sampling.reply.value = "Go in May."
        assert made.run_deferred(now=float("inf")) == 1
    assert future.result(timeout=10).content.text == "Go in May."


def test_the_explorers_call_shows_its_form_in_the_explorer(
    asker: tuple[NotebookAsker, list[Any]]
) -> None:
    """Started from the explorer's Call button, the form goes to the Call tab (not under
    whatever cell ran last); it is gone once the result shows; a cell's asks are unaffected."""
    from toolbench._notebook.explorer.explorer import Explorer
    from toolbench.demo import beyond

    made, shown = asker
    with tb.Bench(elicitation="ask", timeout=30) as bench:
        bench.connect("beyond", beyond.create())
        app = Explorer(bench)
        app.tool_list.value = "beyond-ask_user"
        app.form["destination_hint"].value = "Lima"
        app.call_button.click()
        (view,) = wait_answered(made)
        assert shown == [] and list(app.ask_box.children) == [view.widget]
        assert isinstance(view, ElicitationAsk) and "Lima" in view.message.value
        view.form["destination"].value = "Lima"
        view.form["nights"].value = "5"
        view.form["budget"].value = "10"
        view.accept.click()
        assert app.last_future is not None
        app.last_future.result(timeout=30)
        assert app.ask_box.children == ()
        assert isinstance(app.last_result, tb.Result)
        assert app.last_result.data["content"]["nights"] == 5
        assert made._routes == {}  # the route ended with the call
        # The same server asked from a cell (no explorer call running) shows as before.
        future = get_loop().submit(lambda: bench.acall("beyond-ask_user"))
        (view,) = wait_answered(made)
        assert shown == [view.widget] and app.ask_box.children == ()
        view.decline.click()
        assert future.result(timeout=30).data == {"action": "decline", "content": None}


def test_a_route_is_per_server_and_the_latest_wins() -> None:
    made = NotebookAsker(display=lambda _w: None)
    first: list[Any] = []
    second: list[Any] = []
    end_first = made.route("a", first.append)
    end_second = made.route("a", second.append)
    made._show("w1", made._routes["a"][-1])
    end_second()
    made._show("w2", made._routes["a"][-1])
    assert (first, second) == (["w2"], ["w1"])
    end_first()
    end_first()  # twice is harmless
    assert made._routes == {}


# -- a real kernel, the test playing JupyterLab ---------------------------------------------
class Frontend:
    """Enough of JupyterLab's widget manager: it reads comm_opens and sends comm_msgs."""

    def __init__(self) -> None:
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
        self.models: dict[str, dict[str, Any]] = {}
        self.outputs: list[str] = []
        self.idle: set[str] = set()
        self.displayed: list[str] = []  # the cell (request id) each display went to
        self.statuses: dict[str, list[str]] = {}  # request id -> busy/idle, in order
        self.echoes: dict[str, list[str]] = {}  # comm id -> the parent of each echo_update
        self.printed: dict[str, str] = {}  # request id -> what was printed under it

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def run(self, code: str, timeout: float = 90) -> None:
        reply = self.client.execute_interactive(code, timeout=timeout,
                                                output_hook=self._collect)
        assert reply["content"]["status"] == "ok", reply["content"]

    def _collect(self, message: dict[str, Any]) -> None:
        kind, content = message["msg_type"], message["content"]
        if kind == "comm_open":
            self.models[content["comm_id"]] = dict(content["data"]["state"])
        elif kind == "comm_msg" and content["comm_id"] in self.models:
            data = content.get("data") or {}
            if data.get("method") in ("update", "echo_update"):
                self.models[content["comm_id"]].update(data.get("state") or {})
            if data.get("method") == "echo_update":
                self.echoes.setdefault(content["comm_id"], []).append(
                    message["parent_header"].get("msg_id", ""))
        elif kind == "status":
            self.statuses.setdefault(message["parent_header"].get("msg_id", ""), []).append(
                content["execution_state"])
        elif kind == "stream":
            self.outputs.append(content["text"])
            parent = message["parent_header"].get("msg_id", "")
            self.printed[parent] = self.printed.get(parent, "") + content["text"]
        elif kind == "display_data":
            self.displayed.append(message["parent_header"].get("msg_id", ""))
        elif kind == "error":
            self.outputs.append(f"{content['ename']}: {content['evalue']}")

    def start(self, code: str) -> str:
        return str(self.client.execute(code))

    def read_until(self, done: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            assert left > 0, f"timed out; outputs so far: {self.outputs}"
            try:
                message = self.client.get_iopub_msg(timeout=min(left, 1))
            except queue.Empty:
                continue
            self._collect(message)
            if (message["msg_type"] == "status"
                    and message["content"]["execution_state"] == "idle"):
                self.idle.add(message["parent_header"].get("msg_id"))

    def showing(self, text: str) -> bool:
        return any(isinstance(st.get("value"), str) and text in st["value"]
                   for st in self.models.values())

    def find(self, model: str, **state: Any) -> list[str]:
        return [cid for cid, st in self.models.items() if st.get("_model_name") == model
                and all(st.get(k) == v for k, v in state.items())]

    def update(self, comm_id: str, **state: Any) -> str:
        message = self.client.session.msg("comm_msg", {
            "comm_id": comm_id, "data": {"method": "update", "state": state,
                                         "buffer_paths": []}})
        self.client.shell_channel.send(message)
        return str(message["header"]["msg_id"])

    def field(self, name: str) -> str:
        """The input widget of the form's field ``name`` (its row's second child)."""
        (row,) = [st for st in self.models.values() if st.get("_model_name") == "HBoxModel"
                  and f"toolbench-field-{name}" in (st.get("_dom_classes") or ())]
        return str(row["children"][1]).removeprefix("IPY_MODEL_")

    def answered_like_the_kernel(self, update: str, comm_id: str) -> bool:
        """What ipywidgets waits for before it sends the widget's next change: busy, then
        idle, parented to the update, and the echo of the new value parented to it too."""
        return (self.statuses.get(update) == ["busy", "idle"]
                and update in self.echoes.get(comm_id, []))

    def click(self, comm_id: str) -> None:
        self.client.shell_channel.send(self.client.session.msg("comm_msg", {
            "comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}))


@pytest.fixture
def frontend() -> Iterator[Frontend]:
    pytest.importorskip("jupyter_client")
    made = Frontend()
    try:
        made.run(f"import sys; sys.path.insert(0, {str(ROOT)!r})\nimport toolbench as tb\n"
                 f"bench = tb.Bench(elicitation='ask', sampling='ask', timeout=60)\n"
                 f"bench.connect('beyond', [sys.executable, '-m', 'toolbench.demo.beyond'])")
        yield made
    finally:
        made.close()


def type_keys(frontend: Frontend, comm_id: str, text: str) -> None:
    """Type ``text`` key by key as ipywidgets' front end sends it: each change only after the
    kernel has answered the previous one (busy, echo, idle, all parented to it)."""
    for end in range(1, len(text) + 1):
        update = frontend.update(comm_id, value=text[:end])
        frontend.read_until(lambda u=update: frontend.answered_like_the_kernel(u, comm_id),
                            timeout=30)


def fill_correct_and_accept(frontend: Frontend) -> None:
    """A person's way through the trip form: typing, a rejected value, the correction."""
    frontend.read_until(lambda: frontend.find("ButtonModel", description="Accept"))
    (accept,) = frontend.find("ButtonModel", description="Accept")
    type_keys(frontend, frontend.field("destination"), "Lima")
    type_keys(frontend, frontend.field("nights"), "-3")
    type_keys(frontend, frontend.field("budget"), "1234.5")
    travel = frontend.field("travel_class")
    update = frontend.update(travel, index=2)  # (blank, economy, business, first)
    frontend.read_until(lambda: frontend.answered_like_the_kernel(update, travel))
    insurance = frontend.field("insurance")
    update = frontend.update(insurance, value=True)
    frontend.read_until(lambda: frontend.answered_like_the_kernel(update, insurance))
    frontend.click(accept)
    frontend.read_until(lambda: frontend.showing("less than the minimum of 1"))
    type_keys(frontend, frontend.field("nights"), "5")  # the correction, after the error
    frontend.click(accept)


TYPED = ("ANSWER {'action': 'accept', 'content': {'destination': 'Lima', 'nights': 5, "
         "'budget': 1234.5, 'travel_class': 'business', 'insurance': True}}")


@pytest.mark.slow
def test_a_blocking_call_in_a_kernel_is_answered_through_the_form(frontend: Frontend) -> None:
    cell = frontend.start("r = bench.call('beyond-ask_user', destination_hint='Lima')\n"
                          "print('ANSWER', r.data)")
    nxt = frontend.start("print('NEXT CELL RAN')")  # queued behind the blocked cell
    fill_correct_and_accept(frontend)
    frontend.read_until(lambda: nxt in frontend.idle)
    printed = "".join(frontend.outputs)
    assert TYPED in printed
    # the next cell waited for this one, and ran after it, once
    assert printed.count("NEXT CELL RAN") == 1
    assert printed.index("ANSWER") < printed.index("NEXT CELL RAN")
    assert cell in frontend.idle
    assert frontend.displayed == [cell]  # the form showed in the blocked cell
    # After the pump answered each message under its own parent, the cell's output is still
    # the cell's (its parent was put back), and the cell's own status is busy, then idle.
    assert TYPED in frontend.printed[cell]
    assert frontend.statuses[cell] == ["busy", "idle"]


@pytest.mark.slow
def test_an_awaiting_cell_is_answered_too(frontend: Frontend) -> None:
    """``await bench.acall(...)``: ipykernel dispatches comms itself while a cell awaits (but
    without busy/idle, which toolbench adds); the form is shown through the kernel's event
    loop, in the awaiting cell."""
    cell = frontend.start("r = await bench.acall('beyond-ask_user')\nprint('ANSWER', r.data)")
    fill_correct_and_accept(frontend)
    frontend.read_until(lambda: cell in frontend.idle)
    assert TYPED in frontend.printed[cell]
    assert frontend.displayed == [cell]  # the form showed in the awaiting cell
    cell = frontend.start("r = await bench.acall('beyond-ask_user')\nprint('ANSWER', r.data)")
    frontend.read_until(lambda: len(frontend.find("ButtonModel", description="Decline")) == 2)
    decline = frontend.find("ButtonModel", description="Decline", disabled=False)[0]
    frontend.click(decline)
    frontend.read_until(lambda: cell in frontend.idle)
    assert "ANSWER {'action': 'decline', 'content': None}" in frontend.printed[cell]


@pytest.mark.slow
def test_sampling_reply_typed_in_a_kernel_reaches_the_server(frontend: Frontend) -> None:
    cell = frontend.start("r = bench.call('beyond-ask_llm', question='<b>hot?</b>')\n"
                          "print('REPLY', r.data['text'], r.data['model'])")
    frontend.read_until(lambda: frontend.find("ButtonModel", description="Send"))
    (send,) = frontend.find("ButtonModel", description="Send")
    (reply,) = frontend.find("TextareaModel")
    transcript = [st["value"] for st in frontend.models.values()
                  if st.get("_model_name") == "HTMLModel" and "hot?" in st.get("value", "")]
    assert transcript and "&lt;b&gt;hot?&lt;/b&gt;" in transcript[0]
    type_keys(frontend, reply, "Go in May.")
    frontend.click(send)
    frontend.read_until(lambda: cell in frontend.idle)
    assert "REPLY Go in May. toolbench-human" in frontend.printed[cell]


@pytest.mark.slow
def test_an_interrupt_during_an_ask_cancels_the_call_and_the_kernel_goes_on(
    frontend: Frontend
) -> None:
    cell = frontend.start("try:\n    bench.call('beyond-ask_user')\n"
                          "except KeyboardInterrupt:\n    print('INTERRUPTED')\n")
    frontend.read_until(lambda: cell in frontend.displayed)  # the person sees the form
    frontend.manager.interrupt_kernel()
    frontend.read_until(lambda: cell in frontend.idle)
    assert "INTERRUPTED" in "".join(frontend.outputs)
    # the form says it is over; the bench and its connection still work
    frontend.read_until(lambda: frontend.showing("ended before it was answered"))
    (accept,) = frontend.find("ButtonModel", description="Accept")
    assert frontend.models[accept]["disabled"] is True
    frontend.outputs.clear()
    frontend.run("print('AFTER', bench.call('beyond-countdown', steps=1, delay_ms=0).text)")
    assert "AFTER counted 1 steps" in "".join(frontend.outputs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))

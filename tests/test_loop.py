"""The shared loop as the Bench uses it for an McpClient: threads, foreign loops, interrupts,
a real kernel (McpClient itself is async; tests/loop_client.py drives it through the loop)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from loop_client import LoopClient
from servers.memory import make_mem_server

from toolbench._core.ids import ToolId
from toolbench._loop import THREAD_NAME, get_loop

ROOT = Path(__file__).parent.parent
ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "echo_server.py")]


ADD = ToolId("mem", "add")


@pytest.fixture
def mem() -> Iterator[LoopClient]:
    client = LoopClient(make_mem_server(), name="mem")
    client.connect()
    yield client
    client.close()


def test_sync_twin_from_plain_threads(mem: LoopClient) -> None:
    results: list[Any] = []
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            results.append(mem.call_sync(ADD, {"a": i, "b": 1}).structured)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert sorted(r["result"] for r in results) == list(range(1, 9))


def test_sync_method_on_the_loop_thread_raises_clearly(mem: LoopClient) -> None:
    async def inside() -> Any:
        return mem.call_sync(ADD, {"a": 1, "b": 2})

    with pytest.raises(RuntimeError, match="await its async twin"):
        get_loop().run(inside)
    assert mem.call_sync(ADD, {"a": 1, "b": 2}).structured == {"result": 3}


def test_async_face_from_a_foreign_asyncio_loop(mem: LoopClient) -> None:
    async def main() -> tuple[Any, str]:
        result = await get_loop().arun(mem.call, ADD, {"a": 20, "b": 22})
        specs = await get_loop().arun(mem.list_tools, "mem")
        return result.structured, ",".join(sorted(s.name for s in specs))

    assert asyncio.run(main()) == ({"result": 42}, "add,slow")


def test_connection_opened_in_one_foreign_loop_used_in_another() -> None:
    client = LoopClient(make_mem_server(), name="mem")
    asyncio.run(get_loop().arun(client.aconnect))  # this loop ends; the connection lives on
    assert asyncio.run(get_loop().arun(client.call, ADD, {"a": 1, "b": 1})).structured == {
        "result": 2}
    asyncio.run(get_loop().arun(client.aclose))
    assert client.status == "closed"


def test_one_loop_thread_for_every_connection(mem: LoopClient) -> None:
    with LoopClient(make_mem_server(), name="other") as other:
        other.call_sync(ToolId("other", "add"), {"a": 1, "b": 1})
        named = [t for t in threading.enumerate() if t.name == THREAD_NAME]
        assert THREAD_NAME == "toolbench-loop"
        assert len(named) == 1 and named[0].daemon


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="SIGINT reaches the main thread only")
@pytest.mark.usefixtures("sigint_raises")
def test_interrupt_cancels_on_the_loop_and_everything_stays_usable(mem: LoopClient) -> None:
    cancelled = threading.Event()

    async def long_wait() -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise

    for work in (lambda: get_loop().run(long_wait),
                 lambda: mem.call_sync(ToolId("mem", "slow"), {"seconds": 30})):
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        started = time.monotonic()
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                work()
        finally:
            timer.cancel()
        assert time.monotonic() - started < 5
    assert cancelled.is_set()
    assert mem.status == "connected"
    assert mem.call_sync(ADD, {"a": 2, "b": 2}).structured == {"result": 4}


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="SIGINT reaches the main thread only")
@pytest.mark.usefixtures("sigint_raises")
def test_an_interrupt_taken_by_another_thread_still_ends_the_wait() -> None:
    """Any thread of the process may take a SIGINT; its handler then waits for the main
    thread, which a single unbounded lock wait never wakes: the interrupt came only when the
    call ended (60 s later, in the CI failure of a connect). pthread_kill picks the thread."""
    ended = threading.Event()

    async def long_wait() -> None:
        try:
            await anyio.sleep(30)
        finally:
            ended.set()

    def interrupt_from_this_thread() -> None:
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    timer = threading.Timer(0.3, interrupt_from_this_thread)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            get_loop().run(long_wait)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10  # the call lasts 30 s; the slices make it ~0.35 s
    assert ended.wait(5)  # and the call was cancelled on the loop, not left running


@pytest.mark.slow
def test_jupyter_kernel_keeps_a_connection_across_cells() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [
        f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tests')!r}]\n"
        "print(sys.executable)\nfrom loop_client import LoopClient\n"
        "from toolbench._core.ids import ToolId\nfrom toolbench._loop import get_loop\n"
        f"c = LoopClient({ECHO!r}, name='echo')\nc.connect()\nprint('status', c.status)",
        "print('sync', c.call_sync(ToolId('echo', 'echo'), {'text': 'from cell 2'}).text)",
        "r = await get_loop().arun(c.call, ToolId('echo', 'add'), {'a': 3, 'b': 4})\n"
        "print('async', r.structured)",
        "c.close()\nprint('closed', c.status)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=60,
                                     resources={"metadata": {"path": str(ROOT)}})
    client.km = client.create_kernel_manager()
    client.km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"]
    client.execute(env=env)
    outputs = ["".join(o.get("text", "") for o in cell.outputs) for cell in nb.cells]
    errors = [o for cell in nb.cells for o in cell.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    assert outputs[0].splitlines()[0] == sys.executable
    assert "status connected" in outputs[0]
    assert "sync from cell 2" in outputs[1]
    assert "async {'result': 7}" in outputs[2]
    assert "closed closed" in outputs[3]
    assert not any("cancel scope" in text for text in outputs)

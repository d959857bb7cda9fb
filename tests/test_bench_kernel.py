"""The Bench inside a real Jupyter kernel: cell numbers, sessions across cells, interrupts."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent
ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "echo_server.py")]

pytestmark = pytest.mark.slow


def run_notebook(cells: list[str], interrupt_cell: int | None = None) -> list[Any]:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=90, allow_errors=True,
                                     resources={"metadata": {"path": str(ROOT)}})
    client.km = client.create_kernel_manager()
    client.km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"]
    timers: list[threading.Timer] = []
    if interrupt_cell is not None:
        original = client.async_execute_cell

        async def execute_cell(cell: Any, cell_index: int, *args: Any, **kwargs: Any) -> Any:
            if cell_index == interrupt_cell:
                timer = threading.Timer(2.0, _interrupt_like_jupyter, [client.km])
                timers.append(timer)
                timer.start()
            return await original(cell, cell_index, *args, **kwargs)

        client.async_execute_cell = execute_cell  # type: ignore[method-assign]
    try:
        client.execute(env=env)
    finally:
        for timer in timers:
            timer.cancel()
    return list(nb.cells)


def _interrupt_like_jupyter(km: Any) -> None:
    """What the notebook's interrupt button does: SIGINT to the kernel's process group."""
    pid = km.provisioner.process.pid
    group = os.getpgid(pid)
    if group != os.getpgid(0):
        os.killpg(group, signal.SIGINT)
    else:  # never signal our own group (pytest's)
        os.kill(pid, signal.SIGINT)


def text_of(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs)


def test_records_carry_the_cell_number_and_interrupts_are_in_doubt() -> None:
    cells = [
        "import toolbench as tb\n"
        f"bench = tb.Bench()\nbench.connect('echo', {ECHO!r})\nprint('ok')",
        "r = bench.call('echo-echo', text='hi')\nprint('cell-number', bench.records.iloc[-1]"
        "['provenance']['cell'])",
        "r = await bench.acall('echo-add', a=1, b=2)\nprint('async', r.structured)",
        "bench.call('echo-slow', seconds=60)",  # interrupted after 2 s
        "last = bench.records.iloc[-1]\nprint('after', last['disposition'], last['error_type'])\n"
        "print('still', bench.call('echo-echo', text='alive').text)\n"
        "print('status', bench.servers.iloc[0]['status'])",
        "bench.close()\nprint('closed', list(bench.servers['status']))",
    ]
    nb = run_notebook(cells, interrupt_cell=3)
    errors = {i: o for i, c in enumerate(nb) for o in c.outputs if o.get("output_type") == "error"}
    assert set(errors) == {3}, errors
    assert errors[3]["ename"] == "KeyboardInterrupt"
    assert "ok" in text_of(nb[0])
    number = nb[1].get("execution_count")
    assert f"cell-number {number}" in text_of(nb[1])
    assert "async {'result': 3}" in text_of(nb[2])
    assert "after in_doubt TimedOut" in text_of(nb[4])
    assert "still alive" in text_of(nb[4])
    assert "status connected" in text_of(nb[4])
    assert "closed ['closed']" in text_of(nb[5])


RECORD_WIDGET_THREADS = """
import threading, ipywidgets
on_main = {"made": [], "sent": []}
_init, _send = ipywidgets.Widget.__init__, ipywidgets.Widget.send_state

def _made(self, *args, **kwargs):
    on_main["made"].append(threading.current_thread() is threading.main_thread())
    _init(self, *args, **kwargs)

def _sent(self, *args, **kwargs):
    on_main["sent"].append(threading.current_thread() is threading.main_thread())
    return _send(self, *args, **kwargs)

ipywidgets.Widget.__init__, ipywidgets.Widget.send_state = _made, _sent
import anyio
import toolbench as tb

@tb.tool(server="w")
async def nap(n: int) -> int:
    await anyio.sleep(0.02)
    return n

bench = tb.Bench()
bench.add(tb.ToolBox(nap))
print("ready")
"""


def test_progress_bars_change_on_the_kernels_thread_under_their_cell() -> None:
    cells = [
        RECORD_WIDGET_THREADS,
        "df = bench.map('w-nap', [{'n': i} for i in range(30)], progress=True)\n"
        "print('sync', len(df))",
        "df = await bench.amap('w-nap', [{'n': i} for i in range(30)], progress=True)\n"
        "print('async', len(df))",
        "print('made', len(on_main['made']), all(on_main['made']))\n"
        "print('sent', len(on_main['sent']), all(on_main['sent']))",
    ]
    nb = run_notebook(cells)
    errors = [o for c in nb for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    for index, label in ((1, "sync 30"), (2, "async 30")):
        shown = [o for o in nb[index].outputs if o.get("output_type") == "display_data"]
        assert any("application/vnd.jupyter.widget-view+json" in o["data"] for o in shown), (
            f"no bar under cell {index}: {nb[index].outputs}")
        assert label in text_of(nb[index])
    report = text_of(nb[3])
    assert "made 0" not in report and "sent 0" not in report, report
    assert "True" in report.splitlines()[0] and report.splitlines()[1].endswith("True"), report


def test_a_result_with_a_view_shows_the_view_above_its_card() -> None:
    """DESIGN.md, "MCP Apps": in a notebook the Result's display puts the live view above the
    usual result card; a result without a view stays one plain ``execute_result``."""
    cells = [
        "import sys\nimport toolbench as tb\nfrom toolbench import demo\n"
        "bench = tb.Bench()\n"
        "bench.connect('atlas', [sys.executable, '-m', 'toolbench.demo.atlas'],"
        " env=demo.python_path_env())\nprint('ok')",
        "bench.call('atlas-show_map', from_city='London', to_city='Tokyo')",
        "bench.call('atlas-distance', from_city='Paris', to_city='Rome')",
        "bench.close()",
    ]
    nb = run_notebook(cells)
    errors = [o for c in nb for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    shown = nb[1].outputs
    kinds = [("widget" if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
              else "card" if "text/html" in o.get("data", {}) else o.get("output_type"))
             for o in shown]
    assert kinds == ["widget", "card"], shown
    assert "London" in shown[1]["data"]["text/plain"] or "Tokyo" in shown[1]["data"]["text/plain"]
    plain = nb[2].outputs
    assert [o["output_type"] for o in plain] == ["execute_result"], plain
    assert "application/vnd.jupyter.widget-view+json" not in plain[0]["data"]

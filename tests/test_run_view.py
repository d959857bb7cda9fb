"""A Run in a notebook (``toolbench/_notebook/views/run.py``): the transcript and its cards,
and a tool result with an MCP Apps view shown above its card, as a single call's is.

The server is tests/servers/view_server.py (the real SDK's MCPServer) in process: ``show``
declares a view, ``plain`` has none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from tests.servers import view_server
from toolbench._notebook.views import run as run_view


@pytest.fixture
def bench(tmp_path: Path) -> Any:
    with tb.Bench(timeout=30) as made:
        made.connect("flip", view_server.create(tmp_path / "state.json"))
        yield made


def test_a_result_with_a_view_shows_it_above_its_card(bench: tb.Bench,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    model = tb.ScriptedModel([[{"tool": "flip-plain"}, {"tool": "flip-show",
                                                       "arguments": {"text": "<i>x</i>"}}],
                              "Shown."])
    run = bench.run(model, "show it")
    assert run.stopped == "answered" and [r.ok for r in run.rows if r.kind == "tool"] == [
        True, True]
    show_id = next(r.call_id for r in run.rows if r.tool == "flip-show")
    plain_id = next(r.call_id for r in run.rows if r.tool == "flip-plain")
    assert run.results[show_id].app_opener is not None  # as bench.call's result would
    assert run.results[plain_id].app_opener is None
    assert run._ipython_display_ is not None

    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda value, raw=False: shown.append(value))
    run._ipython_display_()
    kinds = ["html" if isinstance(v, dict) and "text/html" in v else type(v).__name__
             for v in shown]
    assert kinds[0] == "html" and kinds[-1] == "html" and len(kinds) == 3
    view = shown[1]
    assert view is run.results[show_id].app  # the live view, made once
    before, after = shown[0]["text/html"], shown[2]["text/html"]
    assert "flip-plain" in before and "flip-show" not in before  # the view comes first
    assert "flip-show" in after and "&lt;i&gt;x&lt;/i&gt;" in after and "Shown." in after
    assert "<i>x</i>" not in before + after


def test_a_view_that_cannot_open_leaves_the_transcript(bench: tb.Bench,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench.run(tb.ScriptedModel([{"tool": "flip-show"}, "ok"]), "show")
    result = next(iter(run.results.values()))

    def broken() -> Any:
        raise RuntimeError("no widget")

    result.app_opener = broken
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda value, raw=False: shown.append(value))
    run_view.show_run(run)
    texts = [v.get("text/plain", "") for v in shown if isinstance(v, dict)]
    assert any("the view could not be opened: RuntimeError" in t for t in texts)
    assert "flip-show" in shown[-1]["text/html"]


def test_a_run_draws_without_the_notebook_layer_as_escaped_text() -> None:
    from toolbench._bench.models import run as run_module

    made = tb.Run(id="r" * 32, model="<m>", messages=[{"role": "user", "content": "<q>"}],
                  stopped="error", error="the model raised ValueError: <boom>")
    saved = (run_module._run_html, run_module._run_display)
    run_module.register_run_display(None)
    try:
        page = made._repr_html_()
    finally:
        run_module.register_run_display(*saved)
    assert page.startswith("<pre>") and "&lt;boom&gt;" in page and "<boom>" not in page
    drawn = made._repr_html_()
    assert "toolbench-run" in drawn and "&lt;q&gt;" in drawn and "&lt;boom&gt;" in drawn


def test_a_drawing_that_fails_falls_back_to_text() -> None:
    made = tb.Run(id="r" * 32, model="m", messages=[{"role": "user", "content": "q"}])
    made.rows.append(object())  # type: ignore[arg-type]  # not a Step: drawing fails
    page = made._repr_html_()
    assert "(the transcript could not be drawn: AttributeError)" in page
    assert repr(made) == f"<Run {'r' * 32}>"

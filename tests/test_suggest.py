"""The explorer's prompt form offers the server's completions as one types
(toolbench/_notebook/explorer/suggest.py): debounced (a burst of keystrokes is one or two requests),
with the other fields as context, bounded, and a failure is a note, never an exception."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer
from test_widgets import PROMPTS, choose, open_section

import toolbench as tb
from toolbench._notebook.explorer.explorer import explorer

TEAMS = {"Engineering": ["Alice", "Bob", "Charlie"], "Sales": ["David", "Eve"]}
asked: list[tuple[str, str, dict[str, str]]] = []


def team_server() -> MCPServer:
    server = MCPServer("team")

    @server.prompt()
    def promote(department: str, name: str) -> str:
        """Promote someone."""
        return f"Promote {name} in {department}"

    @server.resource("team://{member}")
    def member(member: str) -> str:
        """One member."""
        return f"member {member}"

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
        chosen = dict(context.arguments or {}) if context is not None else {}
        asked.append((argument.name, argument.value, chosen))
        if argument.name == "member":
            values = [n for names in TEAMS.values() for n in names
                      if n.startswith(argument.value)]
        elif argument.name == "department":
            values = [d for d in TEAMS if d.startswith(argument.value)]
        else:
            values = [n for n in TEAMS.get(chosen.get("department", ""), [])
                      if n.startswith(argument.value)]
        return types.Completion(values=values)

    return server


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def bench() -> Iterator[tb.Bench]:
    asked.clear()
    with tb.Bench() as b:
        b.connect("team", team_server())
        yield b


def test_bench_complete_with_context(bench: tb.Bench) -> None:
    assert bench.complete("team-promote", "department", "") == ["Engineering", "Sales"]
    assert bench.complete("team-promote", "name", "", {"department": "Sales"}) == [
        "David", "Eve"]
    with pytest.raises(tb.Refused, match="invalid value"):
        bench.complete("team-promote", "name", 3)  # type: ignore[arg-type]


def test_the_prompt_form_offers_completions_debounced(bench: tb.Bench) -> None:
    app = explorer(bench)
    try:
        open_section(app, PROMPTS)
        choose(app.prompt_choice, "promote")
        suggest = app.prompt_suggest
        assert suggest is not None
        department = app.prompt_form["department"]
        for text in ("E", "En", "Eng", "Engi"):  # typed faster than the debounce
            department.value = text
        assert _wait_for(lambda: tuple(department.options) == ("Engineering",))
        assert suggest.requests <= 2, asked
        assert asked[-1][:2] == ("department", "Engi")
        app.prompt_form["department"].value = "Engineering"
        name = app.prompt_form["name"]
        name.value = "B"
        assert _wait_for(lambda: tuple(name.options) == ("Bob",))
        assert asked[-1] == ("name", "B", {"department": "Engineering"})
        assert suggest.note.value == ""
    finally:
        app.close()


def test_a_failed_completion_is_a_note(bench: tb.Bench) -> None:
    app = explorer(bench)
    try:
        open_section(app, PROMPTS)
        choose(app.prompt_choice, "promote")
        bench.disconnect("team")
        app.prompt_form["department"].value = "E"
        assert app.prompt_suggest is not None
        assert _wait_for(lambda: "no suggestions" in app.prompt_suggest.note.value)  # type: ignore[union-attr]
        assert tuple(app.prompt_form["department"].options) == ()
    finally:
        app.close()


def test_a_template_form_offers_completions_and_fills_the_uri(bench: tb.Bench) -> None:
    from test_widgets import RESOURCES

    from toolbench._notebook.explorer.template_form import fill, variables

    assert variables("a://{x}/{+y}/{x}") == ["x", "y"]
    assert fill("a://{x}/{+y}", {"x": "a b", "y": "c/d"}) == "a://a%20b/c/d"
    app = explorer(bench)
    try:
        open_section(app, RESOURCES)
        choose(app.resource_choice, "team://{member}")
        template = app.template_form
        assert template is not None and list(template.form.fields) == ["member"]
        member = template.form["member"]
        member.value = "E"
        assert _wait_for(lambda: tuple(member.options) == ("Eve",))
        assert asked[-1][:2] == ("member", "E")
        member.value = "Eve"
        assert app.resource_uri.value == "team://Eve"
        app.read()
        assert app.last_future is not None
        app.last_future.result(timeout=30)
        assert "member Eve" in app.resource_output.value
    finally:
        app.close()


def test_a_late_context_refreshes_the_other_fields(bench: tb.Bench) -> None:
    """The front end may deliver one field's last keys after another's: the name typed
    first gets its suggestions again once the department arrives."""
    app = explorer(bench)
    try:
        open_section(app, PROMPTS)
        choose(app.prompt_choice, "promote")
        name = app.prompt_form["name"]
        name.value = "B"
        assert _wait_for(lambda: bool(asked) and asked[-1] == ("name", "B", {}))
        assert tuple(name.options) == ()
        app.prompt_form["department"].value = "Engineering"
        assert _wait_for(lambda: tuple(name.options) == ("Bob",))
        assert ("name", "B", {"department": "Engineering"}) in asked
    finally:
        app.close()

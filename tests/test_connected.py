"""``Bench.connect`` returns the tool count as an int whose repr says what connected."""

from __future__ import annotations

import pickle
import sys

import pytest
from mcp.server.mcpserver import MCPServer

import toolbench as tb
from toolbench._bench.servers.connected import Connected


def test_an_int_with_a_repr_that_names_the_server_and_transport() -> None:
    two = Connected(2, "time", "stdio")
    assert two == 2 and two + 1 == 3 and isinstance(two, int) and hash(two) == hash(2)
    assert repr(two) == "<connected 'time': 2 tools (stdio)>"
    assert repr(Connected(1, "x", "http")) == "<connected 'x': 1 tool (http)>"
    assert f"{two} tools" == "2 tools" and f"{two:03d}" == "002" and format(two, "d") == "2"
    assert int(two) == 2 and str(int(two)) == "2"
    back = pickle.loads(pickle.dumps(two))
    assert back == 2 and repr(back) == repr(two)
    assert repr(Connected(0, "<b>", "toolbox")) == "<connected '<b>': 0 tools (toolbox)>"


def test_print_says_what_connected() -> None:
    """Issue 37, item 16: ``print(bench.connect(...))`` printed a bare ``2``."""
    assert str(Connected(2, "time", "stdio")) == "connected 'time': 2 tools (stdio)"
    assert str(Connected(1, "x", "http")) == "connected 'x': 1 tool (http)"


def test_connect_in_process_returns_it() -> None:
    server = MCPServer("pair")

    @server.tool()
    def one() -> int:
        return 1

    @server.tool()
    def two() -> int:
        return 2

    with tb.Bench() as bench:
        added = bench.connect("pair", server)
        assert added == 2 and repr(added) == "<connected 'pair': 2 tools (in-process)>"


@pytest.mark.slow
def test_connect_over_stdio_says_so_in_a_repl() -> None:
    with tb.Bench(connect_timeout=60) as bench:
        added = bench.connect("geo", [sys.executable, "-m", "toolbench.demo.geo"])
        assert repr(added) == f"<connected 'geo': {int(added)} tools (stdio)>" and added >= 3
        assert added == bench.servers.iloc[0]["tools"]

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolbench as tb
from toolbench import Destination, Egress, NameCollision, ToolId, ToolSpec, Unreachable
from toolbench._routing.pegboard import PegBoard

Listener = Callable[[str], Awaitable[None]]


class Catalog:
    """A test double: a per-server tool list we can change, recording every call it receives."""

    def __init__(self, tools: Mapping[str, Iterable[str]], host: str | None = None) -> None:
        self.tools = {server: list(names) for server, names in tools.items()}
        self.host = host
        self.sent: list[tuple[ToolId, dict[str, Any], tb.Provenance | None]] = []
        self.lists = 0

    def servers(self) -> Iterable[str]:
        return sorted(self.tools)

    def destination(self, tool: ToolId) -> Destination:
        return Destination.LOCAL if self.host is None else Destination.remote(self.host)

    async def list_tools(self, server: str) -> list[ToolSpec]:
        self.lists += 1
        return [ToolSpec(n, description=f"{n} on {server}") for n in self.tools[server]]

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: tb.Provenance | None = None) -> tb.Result:
        self.sent.append((tool, dict(arguments), provenance))
        return tb.Result([{"type": "text", "text": f"{tool.server}:{tool.tool}"}], tool=tool)


class Notifying(Catalog):
    """A double with the McpClient listener hook; ``fire`` plays a tools/list_changed."""

    def __init__(self, tools: Mapping[str, Iterable[str]]) -> None:
        super().__init__(tools)
        self.listeners: list[Listener] = []

    def add_tools_changed_listener(self, callback: Listener) -> Callable[[], None]:
        self.listeners.append(callback)
        return lambda: self.listeners.remove(callback)

    async def fire(self, server: str) -> None:
        for callback in list(self.listeners):
            await callback(server)


class Gated(Catalog):
    """A double whose listing waits for a gate, so a test can interleave two listings."""

    def __init__(self, tools: Mapping[str, Iterable[str]]) -> None:
        super().__init__(tools)
        self.gates: list[tuple[anyio.Event, list[str]]] = []

    async def list_tools(self, server: str) -> list[ToolSpec]:
        snapshot = list(self.tools[server])  # what the server said when asked
        gate = anyio.Event()
        self.gates.append((gate, snapshot))
        with anyio.fail_after(5):
            await gate.wait()
        return [ToolSpec(n) for n in snapshot]


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(fn)


def board_with(*services: tuple[str, list[str]], separator: str = "-") -> PegBoard:
    pb = PegBoard(separator=separator)

    async def main() -> None:
        for server, names in services:
            await pb.add_service(server, Catalog({server: names}))

    run(main)
    return pb


# -- construction and bad input ------------------------------------------------------------

def test_makes_its_own_router_or_uses_the_one_given() -> None:
    assert isinstance(PegBoard().router, tb.ToolRouter)
    router = tb.ToolRouter()
    assert PegBoard(router).router is router
    with pytest.raises(TypeError, match="ToolRouter"):
        PegBoard(router="nope")  # type: ignore[arg-type]


@pytest.mark.parametrize("separator", ["-", "__", ".", "_", "--"])
def test_separators_from_the_tool_name_alphabet_work(separator: str) -> None:
    pb = board_with(("web", ["search"]), separator=separator)
    assert pb.list_all_tools() == [f"web{separator}search"]
    assert pb.separator == separator


@pytest.mark.parametrize("separator", ["", "::", ":", "/", " ", "-\n", "é"])
def test_separator_outside_the_alphabet_is_refused_with_the_rule(separator: str) -> None:
    with pytest.raises(ValueError, match=r"invalid separator .*\[A-Za-z0-9_\.-\]") as info:
        PegBoard(separator=separator)
    assert repr(separator) in str(info.value)


def test_non_string_separator_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="separator must be a str"):
        PegBoard(separator=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("namespace", ["-web", "we b", "a" * 65, "web::x", ".x"])
def test_invalid_namespace_is_refused_before_listing(namespace: str) -> None:
    pb = PegBoard()
    client = Catalog({"web": ["search"]})
    with pytest.raises(ValueError, match="invalid namespace") as info:
        run(lambda: pb.add_service("web", client, namespace=namespace))
    assert repr(namespace) in str(info.value) and "starting with a letter or digit" in str(
        info.value
    )
    assert client.lists == 0 and pb.tool_count() == 0 and pb.router.servers() == []


def test_prefixed_name_longer_than_128_is_skipped_not_the_server(
        caplog: pytest.LogCaptureFixture) -> None:
    pb = PegBoard()
    client = Catalog({"web": ["ok", "t" * 120]})
    assert run(lambda: pb.add_service("web", client, namespace="n" * 10)) == 1
    assert pb.list_all_tools() == ["nnnnnnnnnn-ok"] and "web" in pb.router
    [(name, reason)] = pb.skipped("web")
    assert name == "t" * 120 and "prefixed name" in reason and "1 to 128" in reason
    assert "skipped 1 tool(s)" in caplog.text and "prefixed name" in caplog.text
    assert "t" * 120 not in caplog.text  # the log names no tool: a name may echo a secret
    # Unprefixed, the same tool fits.
    pb2 = PegBoard()
    assert run(lambda: pb2.add_service("web", client, namespace=None)) == 2
    assert pb2.skipped("web") == []


def test_invalid_tool_names_are_skipped_and_the_rest_registered() -> None:
    pb = PegBoard()
    client = Catalog({"web": ["fine", "get weather", "a::b", "x" * 129]})
    assert run(lambda: pb.add_service("web", client)) == 1
    assert pb.list_all_tools() == ["web-fine"]
    skipped = dict(pb.skipped("web"))
    assert sorted(skipped) == sorted(["get weather", "a::b", "x" * 129])
    assert all("MCP tool-name rule" in why for why in skipped.values())
    assert run(lambda: pb.call_tool("web-fine")).text == "web:fine"
    from toolbench._routing.pegboard import describe_skipped

    [line] = describe_skipped(pb.skipped("web"))
    assert line.startswith("skipped 3 tools") and "'get weather'" in line
    assert "x" * 81 not in line  # an untrusted name is capped in the message


def test_bad_server_and_client_arguments() -> None:
    pb = PegBoard()
    with pytest.raises(ValueError, match="invalid server name"):
        run(lambda: pb.add_service("bad name", Catalog({"bad name": []})))
    with pytest.raises(TypeError, match="not a ToolClient"):
        run(lambda: pb.add_service("web", object()))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a namespace is a str or None"):
        run(lambda: pb.add_service("web", Catalog({"web": []}), namespace=5))  # type: ignore[arg-type]


def test_a_client_listing_something_other_than_specs_is_a_type_error() -> None:
    class Weird(Catalog):
        async def list_tools(self, server: str) -> list[ToolSpec]:
            return ["search"]  # type: ignore[list-item]

    pb = PegBoard()
    with pytest.raises(TypeError, match="not a ToolSpec"):
        run(lambda: pb.add_service("web", Weird({"web": []})))
    assert pb.service_count() == 0 and pb.router.servers() == []


@pytest.mark.parametrize("method", ["get_tool", "tool_id", "get_tool_route", "related",
                                    "unregister_tool", "entry"])
def test_non_string_names_are_type_errors(method: str) -> None:
    pb = board_with(("web", ["search"]))
    with pytest.raises(TypeError, match=r"a tool name is a str, not int 7"):
        getattr(pb, method)(7)
    with pytest.raises(TypeError, match="a tool name is a str"):
        pb.select_tools(["web-search", None])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="iterable of names, not the str"):
        pb.select_tools("web-search")


# -- registering and looking up ------------------------------------------------------------

def test_add_service_prefixes_routes_and_counts() -> None:
    pb = PegBoard()
    client = Catalog({"web": ["search", "fetch"]})
    assert run(lambda: pb.add_service("web", client)) == 2
    assert pb.list_all_tools() == ["web-fetch", "web-search"]
    spec = pb.get_tool("web-search")
    assert spec.name == "web-search" and spec.description == "search on web"
    assert pb.get_tool_route("web-search") == ("web", "search")
    assert pb.tool_id("web-search") == ToolId("web", "search")
    assert pb.router.servers() == ["web"] and pb.router.client("web") is client
    assert (pb.tool_count(), pb.service_count(), pb.namespace_count()) == (2, 1, 1)
    assert "web-search" in pb and "search" not in pb and len(pb) == 2


def test_custom_and_empty_namespaces() -> None:
    pb = PegBoard()
    run(lambda: pb.add_service("brave-search", Catalog({"brave-search": ["search"]}),
                               namespace="brave"))
    run(lambda: pb.add_service("time", Catalog({"time": ["now"]}), namespace=None))
    run(lambda: pb.add_service("clock", Catalog({"clock": ["tick"]}), namespace=""))
    assert pb.list_all_tools() == ["brave-search", "now", "tick"]
    assert pb.get_tool_route("brave-search") == ("brave-search", "search")
    assert pb.get_tool("now").name == "now"
    assert pb.list_namespaces() == ["brave"] and pb.namespace_count() == 1
    assert pb.list_tools_in_namespace(None) == ["now", "tick"]
    assert pb.list_tools_in_namespace("") == ["now", "tick"]
    assert pb.namespace_of("time") == "" and pb.namespace_of("brave-search") == "brave"
    assert pb.namespace_of("nope") is None
    assert pb.service_count() == 3


def test_works_with_a_toolbox_serving_several_servers() -> None:
    box = tb.ToolBox()

    @box.tool(server="web", name="search")
    def web_search(q: str) -> str:
        return f"web found {q}"

    @box.tool(server="files", name="search")
    def files_search(q: str) -> str:
        return f"files found {q}"

    pb = PegBoard()

    async def main() -> tuple[str, str]:
        await pb.add_service("web", box)
        await pb.add_service("files", box)
        a = await pb.call_tool("web-search", {"q": "x"})
        b = await pb.call_tool("files-search", {"q": "x"})
        return a.text, b.text

    assert run(main) == ("web found x", "files found x")
    assert pb.get_tool("web-search").input_schema["required"] == ["q"]


def test_works_with_toolsets_in_process() -> None:
    from toolbench._transports.toolset.toolset import Toolset

    docs, code = Toolset("docs"), Toolset("code")

    @docs.tool("search", "Search the docs.")
    def docs_search(data: dict[str, Any]) -> str:
        return f"docs: {data['q']}"

    @code.tool("search", "Search the code.")
    def code_search(data: dict[str, Any]) -> str:
        return f"code: {data['q']}"

    pb = PegBoard(separator="__")

    async def main() -> str:
        assert await pb.add_service("docs", docs) == 2  # search, and the automatic help
        assert await pb.add_service("code", code) == 2
        return (await pb.call_tool("code__search", {"q": "x"})).text

    assert run(main) == "code: x"
    assert pb.same_named() == {"help": ["code__help", "docs__help"],
                               "search": ["code__search", "docs__search"]}
    assert pb.get_tool("docs__search").description == "Search the docs."


def test_already_routed_to_the_same_client_is_fine_to_another_is_refused() -> None:
    router = tb.ToolRouter()
    mine, other = Catalog({"web": ["search"]}), Catalog({"web": ["search"]})
    router.server("web", mine)
    pb = PegBoard(router)
    assert run(lambda: pb.add_service("web", mine)) == 1
    router.server("files", other)
    with pytest.raises(ValueError, match="already routed to another client"):
        run(lambda: pb.add_service("files", Catalog({"files": ["x"]})))
    assert pb.list_all_tools() == ["web-search"]


def test_adding_a_server_twice_is_refused() -> None:
    pb = PegBoard()
    client = Catalog({"web": ["search"]})
    run(lambda: pb.add_service("web", client))
    with pytest.raises(ValueError, match="already on this pegboard"):
        run(lambda: pb.add_service("web", client, namespace="web2"))
    assert pb.list_all_tools() == ["web-search"] and pb.list_namespaces() == ["web"]


def test_lookup_is_exact_and_unknown_names_suggest_up_to_three() -> None:
    pb = board_with(("web", ["search", "search2", "search3", "searches", "fetch"]))
    for wrong in ["Web-search", " web-search", "web-search ", "web-searc", "search"]:
        with pytest.raises(Unreachable, match="no tool named") as info:
            pb.get_tool(wrong)
        assert info.value.tool is None
        assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
    with pytest.raises(Unreachable) as info:
        pb.get_tool("web-searc")
    message = str(info.value)
    suggested = message.split("did you mean ", 1)[1]
    assert "'web-search'" in suggested and suggested.count("'") == 6  # exactly three names
    with pytest.raises(Unreachable) as info:
        pb.get_tool("zzzzqqq")
    assert "did you mean" not in str(info.value)


def test_select_tools_is_all_or_none_in_the_order_asked() -> None:
    pb = board_with(("web", ["search", "fetch"]), ("files", ["read"]))
    picked = pb.select_tools(["files-read", "web-search"])
    assert picked is not None and [s.name for s in picked] == ["files-read", "web-search"]
    assert pb.select_tools(["files-read", "web-nope"]) is None
    assert pb.select_tools([]) == []
    assert pb.select_tools(iter(["web-fetch"])) == [pb.get_tool("web-fetch")]


def test_listing_is_sorted_and_per_namespace() -> None:
    pb = board_with(("web", ["zeta", "alpha"]), ("files", ["read", "list"]))
    assert pb.list_all_tools() == ["files-list", "files-read", "web-alpha", "web-zeta"]
    assert [s.name for s in pb.get_all_tools()] == pb.list_all_tools()
    assert pb.list_tools_in_namespace("web") == ["web-alpha", "web-zeta"]
    assert [s.name for s in pb.get_tools_in_namespace("files")] == ["files-list", "files-read"]
    assert pb.list_tools_in_namespace("nope") == [] and pb.get_tools_in_namespace("nope") == []
    assert pb.list_namespaces() == ["files", "web"] and pb.list_services() == ["files", "web"]
    assert pb.names_for_server("web") == ["web-alpha", "web-zeta"]
    assert pb.names_for_server("unknown") == []
    entries = pb.entries()
    assert [e.name for e in entries] == pb.list_all_tools()
    assert entries[0].tool_id == ToolId("files", "list") and entries[0].namespace == "files"
    assert [e.tool for e in pb.entries("web")] == ["alpha", "zeta"] and pb.entries("x") == []
    with pytest.raises(TypeError, match="a namespace is a str or None"):
        pb.list_tools_in_namespace(3)  # type: ignore[arg-type]


# -- collisions ----------------------------------------------------------------------------

def assert_unchanged(pb: PegBoard, before: tuple[list[str], list[str], list[str]]) -> None:
    assert (pb.list_all_tools(), pb.router.servers(), pb.list_namespaces()) == before


def snapshot(pb: PegBoard) -> tuple[list[str], list[str], list[str]]:
    return pb.list_all_tools(), pb.router.servers(), pb.list_namespaces()


def test_same_namespace_twice_is_refused_even_without_shared_tools() -> None:
    pb = board_with(("web", ["search"]))
    before = snapshot(pb)
    late = Catalog({"web2": ["fetch", "crawl"]})
    with pytest.raises(NameCollision, match="namespace 'web' already belongs") as info:
        run(lambda: pb.add_service("web2", late, namespace="web"))
    assert info.value.names == ["web-crawl", "web-fetch"]
    assert_unchanged(pb, before)
    assert "web2" not in pb.router


def test_separator_ambiguity_is_a_collision() -> None:
    pb = board_with(("a-b", ["c"]))
    with pytest.raises(NameCollision) as info:
        run(lambda: pb.add_service("a", Catalog({"a": ["b-c", "d"]})))
    assert info.value.names == ["a-b-c"]
    assert "a-b/c" in str(info.value) and "a/b-c" in str(info.value)
    assert pb.list_all_tools() == ["a-b-c"] and pb.get_tool_route("a-b-c") == ("a-b", "c")
    assert pb.router.servers() == ["a-b"]


def test_unprefixed_tool_equal_to_a_prefixed_one_collides_both_ways() -> None:
    pb = board_with(("web", ["search"]))
    with pytest.raises(NameCollision) as info:
        run(lambda: pb.add_service("raw", Catalog({"raw": ["web-search", "x"]}), namespace=None))
    assert info.value.names == ["web-search"]
    pb2 = PegBoard()
    run(lambda: pb2.add_service("raw", Catalog({"raw": ["web-search"]}), namespace=None))
    with pytest.raises(NameCollision):
        run(lambda: pb2.add_service("web", Catalog({"web": ["search"]})))
    assert pb2.get_tool_route("web-search") == ("raw", "web-search")


def test_a_name_listed_twice_is_skipped_and_the_rest_registered() -> None:
    pb = PegBoard()
    client = Catalog({"web": ["search", "fetch", "search"]})
    assert run(lambda: pb.add_service("web", client)) == 1
    assert pb.list_all_tools() == ["web-fetch"] and pb.service_count() == 1
    [(name, reason)] = pb.skipped("web")
    assert name == "search" and "more than once" in reason
    # A refresh that fixes the list registers the tool and clears the warning.
    client.tools["web"] = ["search", "fetch"]
    assert run(lambda: pb.refresh("web")) == 2
    assert pb.skipped("web") == [] and "web-search" in pb


def test_every_clashing_name_is_listed_and_nothing_registered() -> None:
    pb = board_with(("x", ["t1", "t2"]), ("y", [f"t{i}" for i in range(30)]))
    before = snapshot(pb)
    counts = (pb.tool_count(), pb.service_count(), pb.namespace_count())
    names = ["x-t1", "x-t2"] + [f"y-t{i}" for i in range(30)] + ["fresh"]
    with pytest.raises(NameCollision) as info:
        run(lambda: pb.add_service("z", Catalog({"z": names}), namespace=None))
    assert len(info.value.names) == 32 and "fresh" not in info.value.names
    for name in info.value.names:
        assert repr(name) in str(info.value)
    assert "and 22 more" in str(info.value)  # the detail is capped; the name list is not
    assert "nothing was registered" in str(info.value)
    assert_unchanged(pb, before)
    assert (pb.tool_count(), pb.service_count(), pb.namespace_count()) == counts
    assert "fresh" not in pb and pb.related("x-t1") == ["y-t1"]


def test_name_collision_is_a_value_error_not_a_tool_error() -> None:
    pb = board_with(("web", ["search"]))
    with pytest.raises(ValueError) as info:
        run(lambda: pb.add_service("web2", Catalog({"web2": ["search"]}), namespace="web"))
    assert not isinstance(info.value, tb.ToolError)


# -- register_tool ----------------------------------------------------------------------------

def test_register_tool_by_hand() -> None:
    pb = PegBoard()
    client = Catalog({"calc": ["add"]})
    pb.router.server("calc", client)
    assert pb.register_tool("calc", ToolSpec("add", "adds"), namespace="math") == "math-add"
    assert pb.get_tool("math-add").description == "adds"
    assert pb.get_tool_route("math-add") == ("calc", "add")
    assert pb.register_tool("plain", ToolSpec("echo")) == "echo"
    assert pb.namespace_of("plain") == "" and pb.list_namespaces() == ["math"]
    result = run(lambda: pb.call_tool("math-add", {"a": 1}))
    assert result.text == "calc:add" and client.sent[0][:2] == (ToolId("calc", "add"), {"a": 1})
    with pytest.raises(Unreachable, match="no route for server 'plain'"):
        run(lambda: pb.call_tool("echo"))


def test_register_tool_follows_the_collision_rules() -> None:
    pb = board_with(("web", ["search"]))
    with pytest.raises(NameCollision) as info:
        pb.register_tool("raw", ToolSpec("web-search"))
    assert info.value.names == ["web-search"]
    with pytest.raises(NameCollision, match="namespace 'web' already belongs"):
        pb.register_tool("other", ToolSpec("fetch"), namespace="web")
    with pytest.raises(ValueError, match="a server has one namespace"):
        pb.register_tool("web", ToolSpec("fetch"), namespace="w")
    assert pb.register_tool("web", ToolSpec("fetch"), namespace="web") == "web-fetch"
    assert pb.names_for_server("web") == ["web-fetch", "web-search"]
    with pytest.raises(TypeError, match="takes a ToolSpec"):
        pb.register_tool("web", "fetch")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid tool name 'a b'"):
        pb.register_tool("web", ToolSpec("a b"), namespace="web")
    assert pb.list_all_tools() == ["web-fetch", "web-search"] and pb.service_count() == 1


# -- removing ------------------------------------------------------------------------------

def test_unregister_tool() -> None:
    pb = board_with(("web", ["search", "fetch"]), ("files", ["search"]))
    pb.unregister_tool("web-search")
    assert pb.list_all_tools() == ["files-search", "web-fetch"]
    assert pb.names_for_server("web") == ["web-fetch"] and "web" in pb.router
    assert pb.related("files-search") == [] and pb.same_named() == {}
    with pytest.raises(Unreachable, match="no tool named 'web-search'"):
        pb.unregister_tool("web-search")


def test_unregister_namespace_removes_route_tools_and_related_then_readd_works() -> None:
    pb = PegBoard()
    web, files = Catalog({"web": ["search", "fetch"]}), Catalog({"files": ["search"]})
    run(lambda: pb.add_service("web", web))
    run(lambda: pb.add_service("files", files))
    assert pb.related("files-search") == ["web-search"]
    assert pb.unregister_namespace("web") == 2
    assert pb.list_all_tools() == ["files-search"] and pb.router.servers() == ["files"]
    assert pb.related("files-search") == [] and pb.same_named() == {}
    assert pb.list_namespaces() == ["files"] and (pb.service_count(), pb.tool_count()) == (1, 1)
    assert pb.unregister_namespace("web") == 0
    with pytest.raises(Unreachable):
        run(lambda: pb.call_tool("web-search"))
    # Re-adding, even with a fresh client (a reconnect), works.
    assert run(lambda: pb.add_service("web", Catalog({"web": ["search"]}))) == 1
    assert pb.related("files-search") == ["web-search"]
    with pytest.raises(ValueError, match="ambiguous"):
        pb.unregister_namespace("")
    with pytest.raises(TypeError):
        pb.unregister_namespace(None)  # type: ignore[arg-type]


def test_remove_service_keeps_a_route_it_does_not_own() -> None:
    router = tb.ToolRouter()
    pb = PegBoard(router)
    pb.register_tool("hand", ToolSpec("echo"), namespace="h")
    client = Catalog({"hand": ["echo"]})
    router.server("hand", client)
    assert pb.remove_service("hand") == 1
    assert router.servers() == ["hand"]  # a hand-registered tool never took the route
    assert pb.remove_service("hand") == 0 and pb.remove_service("never") == 0
    run(lambda: pb.add_service("hand", client))
    assert pb.remove_service("hand") == 1 and router.servers() == []


# -- calling and related names --------------------------------------------------------------

def test_call_tool_sends_the_original_name_to_the_right_server() -> None:
    pb = PegBoard()
    web, files = Catalog({"web": ["search"]}), Catalog({"files": ["search"]})
    run(lambda: pb.add_service("web", web))
    run(lambda: pb.add_service("files", files))
    provenance = tb.Provenance(run="r1")
    result = run(lambda: pb.call_tool("files-search", {"q": 1}, provenance))
    assert result.text == "files:search"
    assert files.sent == [(ToolId("files", "search"), {"q": 1}, provenance)] and web.sent == []
    with pytest.raises(Unreachable, match="did you mean 'files-search'"):
        run(lambda: pb.call_tool("files-serch", {}))
    assert len(files.sent) == 1
    with pytest.raises(tb.Refused, match="arguments must be an object"):
        run(lambda: pb.call_tool("web-search", [1]))  # type: ignore[arg-type]
    assert web.sent == []


def test_call_tool_goes_through_the_routers_egress_check() -> None:
    pb = PegBoard(tb.ToolRouter(egress=Egress(["ok.test"])))
    good, evil = Catalog({"good": ["x"]}, "ok.test"), Catalog({"evil": ["x"]}, "evil.test")
    run(lambda: pb.add_service("good", good))
    run(lambda: pb.add_service("evil", evil))
    run(lambda: pb.call_tool("good-x"))
    with pytest.raises(Unreachable, match="egress refused"):
        run(lambda: pb.call_tool("evil-x"))
    assert len(good.sent) == 1 and evil.sent == []


def test_related_and_same_named() -> None:
    pb = board_with(("a", ["search", "only_a"]), ("b", ["search", "fetch"]),
                    ("c", ["fetch", "search"]))
    pb.register_tool("d", ToolSpec("search"))  # unprefixed: its name is its original name
    assert pb.related("a-search") == ["b-search", "c-search", "search"]
    assert pb.related("search") == ["a-search", "b-search", "c-search"]
    assert pb.related("a-only_a") == []
    assert pb.same_named() == {
        "fetch": ["b-fetch", "c-fetch"],
        "search": ["a-search", "b-search", "c-search", "search"],
    }


# -- refresh -------------------------------------------------------------------------------

def test_refresh_replaces_a_servers_entries() -> None:
    pb = PegBoard()
    client = Catalog({"web": ["search", "fetch"]})
    run(lambda: pb.add_service("web", client))
    client.tools["web"] = ["search", "crawl", "map"]
    assert run(lambda: pb.refresh("web")) == 3
    assert pb.list_all_tools() == ["web-crawl", "web-map", "web-search"]
    assert pb.names_for_server("web") == ["web-crawl", "web-map", "web-search"]
    with pytest.raises(ValueError, match="not on this pegboard"):
        run(lambda: pb.refresh("nope"))


def test_refused_refresh_keeps_the_old_entries() -> None:
    pb = board_with(("web", ["search"]), ("files", ["read"]))
    client = Catalog({"raw": ["x"]})
    run(lambda: pb.add_service("raw", client, namespace=None))
    before = snapshot(pb)
    client.tools["raw"] = ["y", "web-search", "files-read", "y"]
    with pytest.raises(NameCollision) as info:
        run(lambda: pb.refresh("raw"))
    assert info.value.names == ["files-read", "web-search"]  # "y" twice: skipped, no clash
    assert_unchanged(pb, before)
    assert pb.names_for_server("raw") == ["x"]
    # A refresh may keep names the server already had (not a collision with itself).
    client.tools["raw"] = ["x", "z"]
    assert run(lambda: pb.refresh("raw")) == 2


def test_refresh_uses_the_router_for_a_hand_registered_server() -> None:
    pb = PegBoard()
    pb.register_tool("calc", ToolSpec("add"), namespace="calc")
    with pytest.raises(Unreachable, match="no route for server 'calc'"):
        run(lambda: pb.refresh("calc"))
    pb.router.server("calc", Catalog({"calc": ["add", "sub"]}))
    assert run(lambda: pb.refresh("calc")) == 2
    assert pb.list_all_tools() == ["calc-add", "calc-sub"]


def test_a_slower_older_listing_never_overwrites_a_newer_one() -> None:
    pb = PegBoard()
    client = Gated({"web": ["v1"]})

    async def main() -> tuple[int, int]:
        counts: list[int] = []

        async def add() -> None:
            counts.append(await pb.add_service("web", client))

        async def refresh() -> None:
            counts.append(await pb.refresh("web"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(add)
            while len(client.gates) < 1:
                await anyio.sleep(0.001)
            client.gates[0][0].set()
            while pb.service_count() == 0:
                await anyio.sleep(0.001)
            client.tools["web"] = ["v2", "v2b"]
            tg.start_soon(refresh)  # older listing: sees v2
            while len(client.gates) < 2:
                await anyio.sleep(0.001)
            client.tools["web"] = ["v3"]
            tg.start_soon(refresh)  # newer listing: sees v3
            while len(client.gates) < 3:
                await anyio.sleep(0.001)
            client.gates[2][0].set()  # the newer one lands first ...
            while pb.list_all_tools() != ["web-v3"]:
                await anyio.sleep(0.001)
            client.gates[1][0].set()  # ... and the older one must not undo it
        return counts[1], counts[2]

    assert run(main) == (1, 1)  # both report the count that stands
    assert pb.list_all_tools() == ["web-v3"]


def test_a_listener_callback_triggers_refresh_and_is_dropped_on_removal() -> None:
    pb = PegBoard()
    client = Notifying({"web": ["search"]})
    run(lambda: pb.add_service("web", client))
    assert len(client.listeners) == 1
    client.tools["web"] = ["search", "fetch"]
    run(lambda: client.fire("web"))
    assert pb.list_all_tools() == ["web-fetch", "web-search"]
    # A clash found by a notification is recorded, not raised into the transport.
    pb.register_tool("raw", ToolSpec("web-crawl"))
    client.tools["web"] = ["crawl"]
    run(lambda: client.fire("web"))
    assert isinstance(pb.refresh_errors["web"], NameCollision)
    assert pb.names_for_server("web") == ["web-fetch", "web-search"]
    pb.unregister_tool("web-crawl")
    run(lambda: client.fire("web"))
    assert pb.names_for_server("web") == ["web-crawl"] and "web" not in pb.refresh_errors
    assert pb.unregister_namespace("web") == 1
    assert client.listeners == []


def test_a_stale_listener_does_nothing_after_removal() -> None:
    pb = PegBoard()

    class Sticky(Catalog):
        """Offers no way to unsubscribe: the board must ignore its later calls."""

        def __init__(self, tools: Mapping[str, Iterable[str]]) -> None:
            super().__init__(tools)
            self.listeners: list[Listener] = []

        def add_tools_changed_listener(self, callback: Listener) -> None:
            self.listeners.append(callback)

    client = Sticky({"web": ["search"]})
    run(lambda: pb.add_service("web", client))
    pb.remove_service("web")
    lists = client.lists
    run(lambda: client.listeners[0]("web"))
    assert client.lists == lists and pb.tool_count() == 0


def test_a_failing_subscription_leaves_nothing_behind() -> None:
    class Broken(Catalog):
        def add_tools_changed_listener(self, callback: Listener) -> None:
            raise RuntimeError("listener slots exhausted")

    pb = PegBoard()
    with pytest.raises(RuntimeError, match="listener slots exhausted"):
        run(lambda: pb.add_service("web", Broken({"web": ["search"]})))
    assert (pb.tool_count(), pb.service_count(), pb.router.servers()) == (0, 0, [])


def test_two_concurrent_adds_of_one_server_register_it_once() -> None:
    pb = PegBoard()
    client = Gated({"web": ["search"]})
    outcomes: list[object] = []

    async def add(namespace: str) -> None:
        try:
            outcomes.append(await pb.add_service("web", client, namespace=namespace))
        except ValueError as exc:
            outcomes.append(exc)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(add, "one")
            tg.start_soon(add, "two")
            while len(client.gates) < 2:
                await anyio.sleep(0.001)
            for gate, _ in client.gates:
                gate.set()

    run(main)
    assert sorted(map(type, outcomes), key=str) == sorted([int, ValueError], key=str)
    assert "already on this pegboard" in str(next(o for o in outcomes if not isinstance(o, int)))
    assert pb.tool_count() == 1 and pb.namespace_count() == 1 and pb.router.servers() == ["web"]


def test_a_multi_server_client_refreshes_only_the_named_server() -> None:
    pb = PegBoard()
    client = Notifying({"a": ["x"], "b": ["y"]})
    run(lambda: pb.add_service("a", client))
    run(lambda: pb.add_service("b", client))
    client.tools["a"], client.tools["b"] = ["x2"], ["y2"]
    run(lambda: client.fire("b"))
    assert pb.list_all_tools() == ["a-x", "b-y2"]
    # A name the board does not know (a single-server client's own name) refreshes its own.
    run(lambda: client.fire("advertised-name"))
    assert pb.list_all_tools() == ["a-x2", "b-y2"]


# -- threads -------------------------------------------------------------------------------

def test_lookups_from_many_threads_never_see_half_a_service() -> None:
    per_service, services = 25, 6
    v1 = [f"t{i}" for i in range(per_service)]
    v2 = [f"u{i}" for i in range(per_service)]
    client = Catalog({f"s{k}": v1 for k in range(services)})
    pb = PegBoard()
    stop = threading.Event()
    problems: list[str] = []
    seen = {"present": 0, "absent": 0, "reads": 0}

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            k = rng.randrange(services)
            count = pb.tool_count()
            if count % per_service:
                problems.append(f"tool_count {count}")
            names = pb.list_all_tools()
            if len(names) % per_service or names != sorted(names):
                problems.append(f"list_all_tools has {len(names)}")
            in_ns = pb.list_tools_in_namespace(f"s{k}")
            if len(in_ns) not in (0, per_service):
                problems.append(f"namespace s{k} has {len(in_ns)}")
            for version in (v1, v2):
                picked = pb.select_tools([f"s{k}-{t}" for t in version])
                if picked is not None and len(picked) != per_service:
                    problems.append("select_tools partial")
            both = [f"s{k}-{version[0]}" for version in (v1, v2)]
            if sum(name in pb for name in both) > 1:
                problems.append("old and new listing both present")
            by_server: dict[str, int] = {}
            for entry in pb.entries():
                by_server[entry.server] = by_server.get(entry.server, 0) + 1
                if entry.spec.name != entry.name:
                    problems.append(f"spec name {entry.spec.name} != {entry.name}")
            if any(n != per_service for n in by_server.values()):
                problems.append(f"entries per server {by_server}")
            try:
                server, tool = pb.get_tool_route(f"s{k}-t0")
                seen["present"] += 1
                if (server, tool) != (f"s{k}", "t0"):
                    problems.append(f"wrong route {server}/{tool}")
            except Unreachable:
                seen["absent"] += 1
            seen["reads"] += 1

    async def writer() -> None:
        rng = random.Random(0)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            k = rng.randrange(services)
            server = f"s{k}"
            if pb.namespace_of(server) is None:
                client.tools[server] = v1
                await pb.add_service(server, client)
            elif rng.random() < 0.5:
                client.tools[server] = v2 if client.tools[server] == v1 else v1
                await pb.refresh(server)
            elif rng.random() < 0.5:
                pb.remove_service(server)
            else:
                pb.unregister_namespace(server)
            await anyio.sleep(0)

    readers = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(3)]
    for thread in readers:
        thread.start()
    try:
        run(writer)
    finally:
        stop.set()
        for thread in readers:
            thread.join(10)
    assert not any(thread.is_alive() for thread in readers)
    assert problems == [], problems[:5]
    assert seen["present"] > 0 and seen["absent"] > 0 and seen["reads"] > 50


# -- a real MCP server, twice ----------------------------------------------------------------

WHOAMI = Path(__file__).parent / "servers" / "whoami_server.py"


@pytest.mark.slow
def test_two_processes_of_one_server_each_reached_by_its_own_name() -> None:
    from toolbench._transports.mcp.client import McpClient

    async def main() -> dict[str, Any]:
        pb = PegBoard()
        command = [sys.executable, str(WHOAMI)]
        async with McpClient(command, name="left", env={"WHOAMI_LABEL": "left"}) as left, \
                McpClient(command, name="right", env={"WHOAMI_LABEL": "right"}) as right:
            assert await pb.add_service("left", left) == 2
            assert await pb.add_service("right", right) == 2
            assert pb.same_named() == {
                "grow": ["left-grow", "right-grow"], "whoami": ["left-whoami", "right-whoami"]
            }
            assert pb.get_tool("left-whoami").name == "left-whoami"
            a = await pb.call_tool("left-whoami", {})
            b = await pb.call_tool("right-whoami", {})
            assert a.tool == ToolId("left", "whoami") and b.tool == ToolId("right", "whoami")
            # tools/list_changed from the left process refreshes only the left service.
            assert (await pb.call_tool("left-grow")).text == "grew"
            with anyio.fail_after(10):
                while "left-extra" not in pb:
                    await anyio.sleep(0.02)
            assert pb.names_for_server("left") == ["left-extra", "left-grow", "left-whoami"]
            assert pb.names_for_server("right") == ["right-grow", "right-whoami"]
            assert (await pb.call_tool("left-extra")).text == "extra"
            return {"left": a.data, "right": b.data}

    got = anyio.run(main)
    assert got["left"]["label"] == "left" and got["right"]["label"] == "right"
    assert got["left"]["pid"] != got["right"]["pid"]
    assert os.getpid() not in (got["left"]["pid"], got["right"]["pid"])


RENAMING = Path(__file__).parent / "servers" / "renaming_server.py"


@pytest.mark.slow
def test_the_board_re_lists_on_every_connected_event(tmp_path: Path) -> None:
    """An McpClient's one ``connected`` event fires on the first connect and on every
    reconnect; a board that follows the client re-lists on it, so a stdio server restarted
    with a renamed tool is followed without a ``tools/list_changed``."""
    import signal

    from toolbench._transports.mcp.client import McpClient

    async def main() -> tuple[list[str], list[str], int]:
        pb = PegBoard()
        heard: list[str] = []

        async def on_connected(server: str) -> None:
            heard.append(server)

        client = McpClient([sys.executable, str(RENAMING), str(tmp_path / "starts")],
                           name="rs", timeout=20)
        client.add_listener("connected", on_connected)  # before the first connect
        async with client:
            assert await pb.add_service("rs", client) == 2
            with anyio.fail_after(10):
                while not heard:  # the first connect fired it too
                    await anyio.sleep(0.02)
            before = pb.names_for_server("rs")
            pid = int((await pb.call_tool("rs-pid")).text)
            os.kill(pid, signal.SIGKILL)
            with anyio.fail_after(10):
                while client.status != "lost":
                    await anyio.sleep(0.02)
            assert int((await pb.call_tool("rs-pid")).text) != pid  # reconnected
            with anyio.fail_after(10):
                while "rs-tool_v2" not in pb:
                    await anyio.sleep(0.02)
            assert heard == ["rs", "rs"]
            return before, pb.names_for_server("rs"), client.connects

    before, after, connects = anyio.run(main)
    assert before == ["rs-pid", "rs-tool_v1"]
    assert after == ["rs-pid", "rs-tool_v2"]
    assert connects == 2

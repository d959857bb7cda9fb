from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import pytest

import toolbench as tb
from toolbench import Destination, Egress, ToolId


class Remote:
    """A test double that records what reached it: nothing may arrive after a refusal."""

    def __init__(self, server: str, host: str) -> None:
        self.server, self.host, self.sent = server, host, []  # type: list[Any]

    def servers(self) -> Iterable[str]:
        return [self.server]

    def destination(self, tool: ToolId) -> Destination:
        return Destination.remote(self.host)

    async def list_tools(self, server: str) -> list[tb.ToolSpec]:
        return [tb.ToolSpec("echo")]

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: tb.Provenance | None = None) -> tb.Result:
        self.sent.append((tool, dict(arguments)))
        return tb.Result([{"type": "text", "text": "ok"}], tool=tool)


@tb.tool(server="local")
def ping() -> str:
    return "pong"


def run_call(router: tb.ToolRouter, tool: ToolId, args: object) -> tb.Result:
    async def main() -> tb.Result:
        return await router.call(tool, args)  # type: ignore[arg-type]

    return anyio.run(main)


def test_routes_each_server_to_its_client() -> None:
    router = tb.ToolRouter()
    a, b = Remote("a", "a.test"), Remote("b", "b.test")
    router.server("a", a)
    router.server("b", b)
    run_call(router, ToolId("b", "echo"), {"x": 1})
    assert a.sent == [] and b.sent == [(ToolId("b", "echo"), {"x": 1})]
    assert router.servers() == ["a", "b"]
    assert isinstance(router, tb.ToolClient)


def test_routing_twice_raises_and_keeps_the_first() -> None:
    router = tb.ToolRouter()
    first = Remote("a", "a.test")
    router.server("a", first)
    with pytest.raises(ValueError, match="'a' is already routed"):
        router.server("a", Remote("a", "other.test"))
    assert router.client("a") is first


def test_bad_server_name_and_client() -> None:
    router = tb.ToolRouter()
    with pytest.raises(ValueError, match="invalid server name 'a b'"):
        router.server("a b", Remote("a b", "x"))
    with pytest.raises(TypeError, match="not a ToolClient"):
        router.server("a", object())  # type: ignore[arg-type]
    assert router.servers() == []


def test_unrouted_server_is_unreachable_listing_routes_and_local() -> None:
    router = tb.ToolRouter(egress=Egress([]))
    router.server("a", Remote("a", "a.test"))
    tool = ToolId("zzz", "t")
    assert router.destination(tool) is Destination.LOCAL
    with pytest.raises(tb.Unreachable, match=r"no route for server 'zzz'.*\['a'\]") as info:
        run_call(router, tool, {})
    assert info.value.tool == tool


def test_egress_refusal_before_sending() -> None:
    remote = Remote("web", "evil.example.com")
    router = tb.ToolRouter(egress=Egress(["example.com"]))
    router.server("web", remote)
    with pytest.raises(tb.Unreachable, match="egress refused") as info:
        run_call(router, ToolId("web", "echo"), {})
    assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
    assert remote.sent == []


def test_egress_allows_listed_host_and_never_judges_local() -> None:
    remote = Remote("web", "Example.com")
    router = tb.ToolRouter(egress=Egress(["example.com"]))
    router.server("web", remote)
    router.toolbox(tb.ToolBox(ping))
    assert run_call(router, ToolId("web", "echo"), {}).text == "ok"
    assert run_call(router, ToolId("local", "ping"), {}).text == "pong"


def test_no_egress_judges_nothing() -> None:
    remote = Remote("web", "anything.test")
    router = tb.ToolRouter()
    router.server("web", remote)
    assert run_call(router, ToolId("web", "echo"), {}).text == "ok"


def test_non_object_arguments_are_refused_before_sending() -> None:
    remote = Remote("web", "x.test")
    router = tb.ToolRouter()
    router.server("web", remote)
    with pytest.raises(tb.Refused):
        run_call(router, ToolId("web", "echo"), ["a"])
    assert remote.sent == []


def test_toolbox_routes_all_or_nothing() -> None:
    @tb.tool(server="taken")
    def t1() -> int:
        return 1

    router = tb.ToolRouter()
    router.server("taken", Remote("taken", "x.test"))
    with pytest.raises(ValueError, match="already routed"):
        router.toolbox(tb.ToolBox(ping, t1))
    assert router.servers() == ["taken"]
    assert router.toolbox(tb.ToolBox(ping)) == ["local"]


def test_unroute() -> None:
    router = tb.ToolRouter()
    remote = Remote("a", "a.test")
    router.server("a", remote)
    assert router.unroute("a") is remote and router.unroute("a") is None
    router.server("a", remote)


def test_egress_type_is_checked() -> None:
    with pytest.raises(TypeError, match="Egress"):
        tb.ToolRouter(egress=["example.com"])  # type: ignore[arg-type]

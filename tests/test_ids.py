from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolbench import Destination, Egress, Provenance, ToolId

SERVER_CHARS = string.ascii_letters + string.digits + "_.-"
servers = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(string.ascii_letters + string.digits),
    st.text(SERVER_CHARS, max_size=63),
)
tools = st.text(SERVER_CHARS, min_size=1, max_size=128)


@given(servers, tools)
def test_reference_round_trips(server: str, tool: str) -> None:
    tid = ToolId(server, tool)
    assert ToolId.parse(tid.reference) == tid
    assert str(tid) == f"{server}/{tool}"
    assert tid.reference == f"tool://{server}/{tool}"


@given(servers, tools, st.sampled_from([
    "Tool://", "tool:/", "tool:///", "tools://", " tool://", "tool//", "mcp://", "",
]))
def test_parse_rejects_near_miss_schemes(server: str, tool: str, scheme: str) -> None:
    assert ToolId.parse(f"{scheme}{server}/{tool}") is None


@given(servers, tools, st.sampled_from([" ", "\n", "/", "/x", "?", "#", "%20"]))
def test_parse_rejects_trailing_junk(server: str, tool: str, junk: str) -> None:
    assert ToolId.parse(f"tool://{server}/{tool}{junk}") is None


@given(st.text(max_size=40))
def test_parse_never_raises_and_never_guesses(text: str) -> None:
    parsed = ToolId.parse(text)
    if parsed is not None:
        assert parsed.reference == text


@pytest.mark.parametrize("bad", [
    None, 42, b"tool://a/b", "tool://a", "tool://a/", "tool:///b", "tool://-a/b", "tool://a/b/c",
    "tool://a b/c", "tool://" + "a" * 65 + "/b", "tool://a/" + "b" * 129, "TOOL://a/b",
])
def test_parse_malformed_is_none(bad: object) -> None:
    assert ToolId.parse(bad) is None


@pytest.mark.parametrize("server", ["brave-search", "server-everything", "a", "9lives", "a.b_c",
                                    "x" * 64])
def test_valid_server_names(server: str) -> None:
    assert ToolId(server, "t").server == server


@pytest.mark.parametrize("server", ["", "-a", "_a", ".a", "a/b", "a b", "é", "x" * 65, "a:b"])
def test_invalid_server_names_name_value_and_rule(server: str) -> None:
    with pytest.raises(ValueError, match="server name") as info:
        ToolId(server, "t")
    assert repr(server) in str(info.value)
    assert "1 to 64 characters" in str(info.value)


@pytest.mark.parametrize("tool", ["", "a/b", "a b", "x" * 129, "a:b", "ü"])
def test_invalid_tool_names_name_value_and_rule(tool: str) -> None:
    with pytest.raises(ValueError, match="tool name") as info:
        ToolId("s", tool)
    assert "1 to 128 characters" in str(info.value)


def test_tool_names_may_start_with_punctuation() -> None:
    assert ToolId("s", "-x").tool == "-x"
    assert ToolId("s", "_private").tool == "_private"


def test_toolid_is_frozen_hashable_and_sorted() -> None:
    ids = [ToolId("b", "a"), ToolId("a", "z"), ToolId("a", "b")]
    assert sorted(ids) == [ToolId("a", "b"), ToolId("a", "z"), ToolId("b", "a")]
    assert len({ToolId("a", "b"), ToolId("a", "b")}) == 1
    with pytest.raises(AttributeError):
        ids[0].server = "c"  # type: ignore[misc]


def test_destination() -> None:
    assert Destination.LOCAL.host is None and Destination.LOCAL.is_local
    remote = Destination.remote("API.Example.com")
    assert remote.host == "api.example.com" and not remote.is_local
    with pytest.raises(ValueError, match="host"):
        Destination.remote("")
    with pytest.raises(ValueError, match="host"):
        Destination.remote(3)  # type: ignore[arg-type]


def test_egress_is_exact_and_lowercase() -> None:
    egress = Egress(["Example.com", "api.test"])
    assert egress.allows(Destination.remote("example.com"))
    assert egress.allows(Destination.remote("EXAMPLE.COM"))
    assert not egress.allows(Destination.remote("evil.example.com"))
    assert not egress.allows(Destination.remote("example.com.evil"))
    assert not egress.allows(Destination.remote("other.test"))
    assert egress.allows(Destination.LOCAL)
    assert Egress([]).allows(Destination.LOCAL)
    assert not Egress([]).allows(Destination.remote("example.com"))


@pytest.mark.parametrize("bad", [[1], [None], [b"example.com"]])
def test_egress_rejects_non_string_hosts(bad: list[object]) -> None:
    with pytest.raises(TypeError, match="hosts are strings"):
        Egress(bad)  # type: ignore[arg-type]


def test_egress_rejects_a_bare_string_and_wildcards() -> None:
    with pytest.raises(TypeError, match="not a single string"):
        Egress("example.com")
    with pytest.raises(ValueError, match="wildcards"):
        Egress(["*.example.com"])
    with pytest.raises(ValueError, match="non-empty"):
        Egress([" "])


def test_provenance_fields_and_extras() -> None:
    prov = Provenance(run="r1", case=3, agent="me", note="free")
    assert prov.run == "r1" and prov.case == 3 and prov.effect is None
    assert prov.note == "free"
    assert prov.as_dict() == {"run": "r1", "case": 3, "agent": "me", "note": "free"}
    assert Provenance.from_dict(prov.as_dict()) == prov
    assert prov.with_fields(cell=7, run="ignored").as_dict()["run"] == "r1"
    assert prov.with_fields(cell=7).cell == 7
    assert not Provenance()
    with pytest.raises(AttributeError):
        _ = prov.missing
    with pytest.raises(TypeError, match="mapping"):
        Provenance.from_dict([1, 2])  # type: ignore[arg-type]

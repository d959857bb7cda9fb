from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolbench._bench.servers.config import ConfigError, ConfigWarning, parse, read


def test_mcp_servers_format_with_expansion() -> None:
    env = {"HOME_DIR": "/home/u", "TOKEN": "abc"}
    servers = read({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "srv", "${HOME_DIR}/data"],
                  "env": {"KEY": "${TOKEN}", "MODE": "${MODE:-fast}"}, "cwd": "${HOME_DIR}"},
        "web": {"url": "https://${HOST:-api.example.com}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "events": {"url": "http://127.0.0.1:9/sse", "type": "sse"},
    }}, environ=env)
    by = {s.name: s for s in servers}
    assert by["files"].target == ["npx", "-y", "srv", "/home/u/data"]
    assert by["files"].options == {"env": {"KEY": "abc", "MODE": "fast"}, "cwd": "/home/u"}
    assert by["files"].transport == "stdio"
    assert by["web"].target == "https://api.example.com/mcp"
    assert by["web"].options["headers"] == {"Authorization": "Bearer abc"}
    assert by["events"].options["transport"] == "sse"


def test_servers_format_with_types() -> None:
    servers = read({"servers": {
        "a": {"type": "stdio", "command": "x"},
        "b": {"type": "http", "url": "http://h/mcp", "timeout": 5, "max_concurrent": 2},
    }}, environ={})
    assert [s.transport for s in servers] == ["stdio", "http"]
    assert servers[1].options == {"timeout": 5, "max_concurrent": 2}


@pytest.mark.parametrize(("config", "path", "words"), [
    ({"mcpServers": {"a": {"command": "${NOPE}"}}}, "$.mcpServers.a.command", "NOPE"),
    ({"mcpServers": {"a": {"type": "carrier-pigeon", "command": "x"}}}, "$.mcpServers.a.type",
     "carrier-pigeon"),
    ({"mcpServers": {"a": {"command": 3}}}, "$.mcpServers.a.command", "string"),
    ({"mcpServers": {"a": {"command": "x", "args": "nope"}}}, "$.mcpServers.a.args", "list"),
    ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, "$.mcpServers.a.env.K", "string"),
    ({"mcpServers": {"a": {}}}, "$.mcpServers.a", "command"),
    ({"mcpServers": {"a b": {"command": "x"}}}, "$.mcpServers.a b", "server name"),
    ({"mcpServers": {"a": {"url": "ftp://x"}}}, "$.mcpServers.a.url", "http"),
    ({"mcpServers": {"a": {"command": "x", "timeout": -1}}}, "$.mcpServers.a.timeout",
     "positive"),
    ({"mcpServers": []}, "$.mcpServers", "object"),
    ({"tools": {}}, "$", "mcpServers"),
])
def test_mistakes_name_the_json_path(config: dict[str, object], path: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        read(config, environ={})
    assert info.value.path == path
    assert words in str(info.value)
    assert "<config dict>" in str(info.value)


def test_missing_variable_names_the_server() -> None:
    with pytest.raises(ConfigError, match=r"\$\{SECRET\}.*server 'web'"):
        read({"mcpServers": {"web": {"url": "http://h/${SECRET}"}}}, environ={})


def test_malformed_file_names_the_file_and_position(tmp_path: Path) -> None:
    bad = tmp_path / "mcp.json"
    bad.write_text('{"mcpServers": {"a": {"command": "x",}}}')
    with pytest.raises(ConfigError) as info:
        read(bad, environ={})
    assert str(bad) in str(info.value) and "line 1" in str(info.value)
    with pytest.raises(ConfigError, match="cannot read"):
        read(tmp_path / "missing.json", environ={})


def test_file_round_trip(tmp_path: Path) -> None:
    good = tmp_path / "mcp.json"
    good.write_text(json.dumps({"mcpServers": {"t": {"command": "mcp-server-time"}}}))
    [server] = read(good, environ={})
    assert server.target == ["mcp-server-time"] and server.name == "t"


@pytest.mark.parametrize(("entry", "key", "words"), [
    ({"command": "x", "timeout": float("nan")}, "timeout", "finite"),
    ({"command": "x", "timeout": float("inf")}, "timeout", "finite"),
    ({"command": "x", "timeout": -1}, "timeout", "positive"),
    ({"command": "x", "timeout": 0}, "timeout", "positive"),
    ({"command": "x", "timeout": True}, "timeout", "bool true"),
    ({"command": "x", "connect_timeout": "5"}, "connect_timeout", "str"),
    ({"command": "x", "max_concurrent": 2.5}, "max_concurrent", "integer, got float 2.5"),
    ({"command": "x", "max_concurrent": True}, "max_concurrent", "integer, got bool true"),
    ({"command": "x", "max_concurrent": 0}, "max_concurrent", "positive integer"),
    ({"url": "http:///mcp"}, "url", "has no host"),
    ({"url": "http://h:99999/mcp"}, "url", "malformed"),
    ({"url": "HTTPS://"}, "url", "has no host"),
    ({"command": "x", "namespace": "bad ns"}, "namespace", "invalid namespace"),
    ({"command": "x", "namespace": 3}, "namespace", "invalid namespace int 3"),
    ({"command": "x", "disabled": "yes"}, "disabled", "true or false"),
    ({"command": "x", "headers": {"A": "b"}}, "headers", "does not apply to a stdio server"),
    ({"url": "http://h/mcp", "env": {"A": "b"}}, "env", "does not apply to a http server"),
    ({"url": "http://h/mcp", "headers": {"Authorization": 12345678}}, "headers.Authorization",
     "got int"),
])
def test_whole_config_checks_name_the_json_path(entry: dict[str, object], key: str,
                                                words: str) -> None:
    config = {"mcpServers": {"fine": {"command": "y"}, "a": entry}}
    with pytest.raises(ConfigError) as info:
        read(config, environ={})
    assert info.value.path == f"$.mcpServers.a.{key}"
    assert words in str(info.value)
    assert "12345678" not in str(info.value)  # a header value may be a secret: never quoted


def test_structural_mistakes() -> None:
    with pytest.raises(ConfigError, match="both 'mcpServers' and 'servers'"):
        read({"mcpServers": {}, "servers": {}}, environ={})
    with pytest.raises(ConfigError, match="both 'command' and 'url'") as info:
        read({"servers": {"a": {"command": "x", "url": "http://h/mcp"}}}, environ={})
    assert info.value.path == "$.servers.a"
    with pytest.raises(ConfigError, match="invalid server name '-lead'"):
        read({"servers": {"-lead": {"command": "x"}}}, environ={})


def test_nan_in_a_json_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "mcp.json"
    bad.write_text('{"mcpServers": {"a": {"command": "x", "timeout": NaN}}}')
    with pytest.raises(ConfigError, match="finite") as info:
        read(bad, environ={})
    assert info.value.path == "$.mcpServers.a.timeout" and str(bad) in str(info.value)


def test_valid_limits_pass_through() -> None:
    [server] = read({"mcpServers": {"a": {"url": "https://h.example:8443/mcp", "timeout": 2.5,
                                          "connect_timeout": 10, "max_concurrent": 3,
                                          "namespace": None}}}, environ={})
    assert server.options == {"timeout": 2.5, "connect_timeout": 10, "max_concurrent": 3,
                              "namespace": None}
    [plain] = read({"mcpServers": {"b": {"command": "x", "namespace": ""}}}, environ={})
    assert plain.options == {"namespace": ""}


def test_disabled_servers_are_not_expanded_or_returned() -> None:
    parsed = parse({"mcpServers": {
        "on": {"command": "x"},
        "off": {"command": "${NOT_SET_ANYWHERE}", "disabled": True},
        "explicit": {"command": "y", "disabled": False},
    }}, environ={})
    assert [s.name for s in parsed.servers] == ["on", "explicit"]
    assert parsed.disabled == ["off"]


def test_unknown_keys_give_one_warning_naming_each() -> None:
    config = {"mcpServers": {"a": {"command": "x", "autoApprove": [], "timout": 3},
                             "b": {"url": "http://h/mcp", "alwaysAllow": []}},
              "inputs": []}
    with pytest.warns(ConfigWarning) as caught:
        servers = read(config, environ={})
    assert len(caught) == 1 and len(servers) == 2
    message = str(caught[0].message)
    for path in ("$.inputs", "$.mcpServers.a.autoApprove", "$.mcpServers.a.timout",
                 "$.mcpServers.b.alwaysAllow"):
        assert path in message
    assert caught[0].filename == __file__
    assert parse(config, environ={}).unknown  # parse itself never warns
    assert "$.mcpServers.a.timout (did you mean 'timeout'?)" in message
    assert "$.inputs (" not in message  # a top-level key is not a server key's typo


def test_a_key_typo_that_leaves_a_server_incomplete_is_named_in_the_error() -> None:
    config = {"mcpServers": {"geo": {"comand": "python -m toolbench.demo.geo"}}}
    with pytest.raises(ConfigError) as caught:
        parse(config, environ={})
    assert str(caught.value) == (
        "<config dict>: $.mcpServers.geo: a server needs 'command' (stdio) or 'url' "
        "(http/sse); it has the unknown key 'comand' (did you mean 'command'?)")
    with pytest.raises(ConfigError, match=r"unknown keys 'ulr' \(did you mean 'url'\?\), "
                                          r"'zzz'$"):
        parse({"servers": {"web": {"ulr": "http://h/mcp", "zzz": 1}}}, environ={})
    with pytest.raises(ConfigError, match=r"needs 'command' \(stdio\) or 'url' \(http/sse\)$"):
        parse({"servers": {"web": {}}}, environ={})


@pytest.mark.slow
def test_message_and_tool_caps_are_checked_and_reach_the_connection(tmp_path: Path) -> None:
    """``max_message_bytes`` and ``max_tools`` are config keys: checked with their JSON path
    up front, and a real server's oversized reply is then Malformed under the file's cap."""
    import sys

    import toolbench as tb

    for key, bad in (("max_message_bytes", 10), ("max_message_bytes", 2.5), ("max_tools", 0)):
        with pytest.raises(ConfigError, match=rf"\$\.mcpServers\.a\.{key}"):
            read({"mcpServers": {"a": {"command": "x", key: bad}}}, environ={})
    echo = Path(__file__).parent / "servers" / "echo_server.py"
    config = {"mcpServers": {"echo": {"command": sys.executable, "args": [str(echo)],
                                      "max_message_bytes": 4096, "max_tools": 50}}}
    with tb.Bench() as bench:
        servers = bench.load_config(config)
        assert list(servers["status"]) == ["connected"], servers["error"].tolist()
        assert bench.call("echo-echo", text="short").text == "short"
        with pytest.raises(tb.Malformed, match="max_message_bytes=4,096"):
            bench.call("echo-echo", text="x" * 10_000)
        assert bench.call("echo-echo", text="again").text == "again"  # restarted, works


@pytest.mark.slow
def test_protocol_mode_is_a_checked_key_that_reaches_the_connection() -> None:
    """``protocol_mode`` overrides the default ("fast": the 2025 handshake first) per server,
    and ``servers`` shows what each negotiated."""
    import sys

    import toolbench as tb

    for bad in ("quick", 1, None):
        with pytest.raises(ConfigError, match=r"\$\.mcpServers\.a\.protocol_mode"):
            read({"mcpServers": {"a": {"command": "x", "protocol_mode": bad}}}, environ={})
    echo = Path(__file__).parent / "servers" / "echo_server.py"
    config = {"mcpServers": {
        "fast": {"command": sys.executable, "args": [str(echo)]},
        "auto": {"command": sys.executable, "args": [str(echo)], "protocol_mode": "auto"},
    }}
    with tb.Bench() as bench:
        servers = bench.load_config(config).set_index("name")
        assert list(servers["status"]) == ["connected", "connected"], servers["error"].tolist()
        assert bench.call("auto-echo", text="hi").text == "hi"
        assert bench.call("fast-echo", text="hi").text == "hi"
        # The SDK's own server speaks both: "auto" takes 2026, the default the 2025 handshake.
        assert servers.loc["auto", "protocol"] > servers.loc["fast", "protocol"]
        assert servers.loc["fast", "protocol"].startswith("2025-")


def test_auth_is_a_checked_key_with_expanded_hidden_values() -> None:
    import toolbench as tb

    [server] = read({"mcpServers": {"web": {"url": "https://h/mcp", "auth": "oauth"}}},
                    environ={})
    assert server.options["auth"] == tb.OAuth()
    env = {"CID": "robot", "CSECRET": "the-client-secret-value"}
    [server] = read({"mcpServers": {"web": {"url": "https://h/mcp", "auth": {
        "type": "client_credentials", "client_id": "${CID}", "client_secret": "${CSECRET}",
        "scopes": ["read"]}}}}, environ=env)
    auth = server.options["auth"]
    assert isinstance(auth, tb.ClientCredentials)
    assert (auth.client_id, auth.client_secret, auth.scopes) == (
        "robot", "the-client-secret-value", ("read",))
    assert "the-client-secret-value" in server.secrets  # hidden wherever it would show
    assert "the-client-secret-value" not in repr(server) + repr(auth)
    [server] = read({"mcpServers": {"web": {"url": "https://h/mcp", "auth": {
        "type": "oauth", "scopes": ["a", "b"], "store": "memory", "timeout": 5}}}}, environ={})
    assert server.options["auth"] == tb.OAuth(scopes=("a", "b"), store="memory", timeout=5)
    for bad, where in ((
            {"url": "https://h/mcp", "auth": "basic"}, r"\$\.mcpServers\.w\.auth"), (
            {"url": "https://h/mcp", "auth": {"type": "oauth", "token": "x"}}, "unknown field"), (
            {"url": "https://h/mcp", "auth": {"type": "client_credentials",
                                              "client_id": "x"}}, "exactly one of"), (
            {"command": "x", "auth": "oauth"}, "'auth' does not apply to a stdio server")):
        with pytest.raises(ConfigError, match=where):
            read({"mcpServers": {"w": bad}}, environ={})


@pytest.mark.parametrize(("top", "meant"), [("mcpServer", "mcpServers"),
                                            ("MCPServers", "mcpServers"),
                                            ("mcp_servers", "mcpServers"),
                                            ("servrs", "servers")])
def test_a_top_level_key_typo_gets_a_did_you_mean(top: str, meant: str) -> None:
    """Issue 37, item 16: ``mcpServer`` got no "did you mean"."""
    with pytest.raises(ConfigError) as caught:
        parse({top: {"geo": {"command": "x"}}}, environ={})
    assert f"found {top!r} (did you mean {meant!r}?)" in str(caught.value)


def test_a_config_without_servers_names_what_it_found() -> None:
    with pytest.raises(ConfigError, match="found 'tools'"):
        parse({"tools": {}}, environ={})
    with pytest.raises(ConfigError, match="it is empty"):
        parse({}, environ={})

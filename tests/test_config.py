from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolbench._config import ConfigError, read


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

"""MCP Registry entries (``server.json``): what runs, how declared inputs are filled, what is
refused; connected for real to an installed PyPI package and to a loopback remote."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench._bench.clients.registry import choose, installed_script, keyword

ROOT = Path(__file__).parent.parent
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

TIME = {  # the shape of the registry's entry for the reference time server
    "$schema": SCHEMA, "name": "io.github.modelcontextprotocol/time",
    "description": "Time and timezone conversion", "version": "2026.10.19",
    "packages": [{
        "registryType": "pypi", "identifier": "mcp-server-time", "version": "2026.10.19",
        "transport": {"type": "stdio"},
        "packageArguments": [{"type": "named", "name": "--local-timezone",
                              "valueHint": "timezone", "description": "IANA timezone"}]}]}

NPM = {
    "$schema": SCHEMA, "name": "io.github.example/weather", "version": "1.0.2",
    "packages": [{
        "registryType": "npm", "identifier": "@example/weather-mcp", "version": "1.0.2",
        "transport": {"type": "stdio"},
        "runtimeArguments": [{"type": "named", "name": "--node-options", "value": "--max-old"}],
        "packageArguments": [{"type": "positional", "valueHint": "data_dir",
                              "isRequired": True, "description": "where the data is"}],
        "environmentVariables": [
            {"name": "WEATHER_API_KEY", "isRequired": True, "isSecret": True},
            {"name": "UNITS", "default": "metric"}]}]}


def test_an_installed_pypi_package_runs_its_own_script() -> None:
    chosen = choose(TIME, None, {"local_timezone": "UTC"}, runners={"uvx": None, "npx": None})
    script = installed_script("mcp-server-time")
    assert script is not None and script.endswith("mcp-server-time")
    assert chosen.name == "time"
    assert chosen.target == [script, "--local-timezone", "UTC"]
    assert "installed" in chosen.how


def test_a_pypi_package_not_installed_runs_through_uvx() -> None:
    entry = json.loads(json.dumps(TIME).replace("mcp-server-time", "mcp-server-nowhere-xyz"))
    chosen = choose(entry, "t", {}, runners={"uvx": "/usr/bin/uvx", "npx": None})
    assert chosen.target == ["uvx", "mcp-server-nowhere-xyz@2026.10.19"]


def test_npm_through_npx_with_arguments_environment_and_secrets() -> None:
    chosen = choose(NPM, None, {"data_dir": "/data", "WEATHER_API_KEY": "wk-secret-77"},
                    runners={"uvx": None, "npx": "/usr/bin/npx"})
    assert chosen.target == ["npx", "-y", "--node-options", "--max-old",
                             "@example/weather-mcp@1.0.2", "/data"]
    assert chosen.options == {"env": {"WEATHER_API_KEY": "wk-secret-77", "UNITS": "metric"}}
    assert "wk-secret-77" in chosen.secrets


def test_a_missing_required_input_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="environment variable 'WEATHER_API_KEY' is required: "
                       "pass WEATHER_API_KEY="):
        choose(NPM, None, {"data_dir": "/d"}, runners={"npx": "npx"})
    with pytest.raises(ValueError, match="argument <data_dir> is required: pass data_dir="):
        choose(NPM, None, {"WEATHER_API_KEY": "k"}, runners={"npx": "npx"})


def test_a_value_no_input_declares_is_refused() -> None:
    with pytest.raises(ValueError, match="declares no input named timezone"):
        choose(TIME, None, {"timezone": "UTC"})


def test_nothing_runnable_names_what_it_saw() -> None:
    entry = {"name": "io.example/img", "packages": [
        {"registryType": "oci", "identifier": "ghcr.io/example/img"},
        {"registryType": "npm", "identifier": "x", "transport": {"type": "streamable-http",
                                                                   "url": "http://localhost"}}],
        "remotes": [{"type": "websocket", "url": "wss://x"}]}
    with pytest.raises(ValueError, match=r"io.example/img: nothing toolbench can run: oci "
                       r"ghcr.io/example/img .*npm x serves streamable-http itself.*'websocket'"):
        choose(entry, None, {})
    with pytest.raises(ValueError, match="no 'packages' and no 'remotes'"):
        choose({"name": "a/b"}, None, {})


def test_a_remote_whose_url_is_not_http_is_never_run_as_a_command() -> None:
    """A remote's ``url`` is a URL: anything else (a command line, a file: URL), before or
    after its variables are filled, is named as not runnable, never handed to connect, which
    would start it as a stdio command."""
    for url in ("touch /tmp/pwned", "file:///etc/passwd", "{where}"):
        entry = {"name": "io.example/evil", "remotes": [{"type": "streamable-http", "url": url}]}
        with pytest.raises(ValueError, match=r"io.example/evil: nothing toolbench can run: a "
                           r"streamable-http remote whose url is not http\(s\)"):
            choose(entry, None, {"where": "rm -rf ~"} if "{" in url else {})


def test_a_bad_name_is_named_as_given() -> None:
    with pytest.raises(ValueError, match=r"name 'a b' is not a server name"):
        choose(TIME, "a b", {"local_timezone": "UTC"}, runners={"uvx": None, "npx": None})


def test_a_remote_fills_url_variables_and_headers() -> None:
    entry = {"name": "com.example/acme", "remotes": [
        {"type": "sse", "url": "https://acme.example.com/sse"},
        {"type": "streamable-http", "url": "https://{tenant}.example.com/mcp",
         "variables": {"tenant": {"isRequired": True}},
         "headers": [{"name": "X-Api-Key", "isRequired": True, "isSecret": True}]}]}
    chosen = choose(entry, None, {"tenant": "t1", "X_Api_Key": "hk-secret-5"})
    assert chosen.target == "https://t1.example.com/mcp"  # streamable HTTP before SSE
    assert chosen.options == {"headers": {"X-Api-Key": "hk-secret-5"}}
    assert keyword("--local-timezone") == "local_timezone"


@pytest.mark.slow
def test_connect_package_runs_the_installed_time_server(tmp_path: Path) -> None:
    path = tmp_path / "server.json"
    path.write_text(json.dumps(TIME))
    with tb.Bench(connect_timeout=90) as bench:
        connected = bench.connect_package(str(path), local_timezone="UTC")
        assert connected.server == "time" and connected == 2
        names = set(bench.catalog()["name"])
        assert {"time-get_current_time", "time-convert_time"} <= names
        now = bench.call("time-get_current_time", timezone="UTC").data
        assert now["timezone"] == "UTC"


@pytest.mark.slow
def test_connect_package_reaches_a_remote_on_loopback_and_hides_its_header() -> None:
    from serving import served_url

    with served_url(ROOT / "tests" / "servers" / "big_catalog_http.py", "--tools", "2",
                    "--tiny") as url:
        entry: dict[str, Any] = {"name": "io.example/remote", "remotes": [{
            "type": "streamable-http", "url": url,
            "headers": [{"name": "Authorization", "isSecret": True, "isRequired": True}]}]}
        with tb.Bench(connect_timeout=60) as bench:
            bench.connect_package(entry, name="far", Authorization="Bearer rk-secret-123")
            assert len(bench.catalog(server="far")) == 2
            shown = repr(bench.servers.to_dict()) + repr(bench)
            assert "rk-secret-123" not in shown


@pytest.mark.slow
def test_a_bad_server_json_file_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "server.json"
    path.write_text('{\n  "name": "a/b",\n  "packages": [\n}')
    with tb.Bench() as bench, pytest.raises(ValueError, match=r"server.json.*line 4"):
        bench.connect_package(str(path))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))

"""Other clients' config files: where they are, each format read by content and connected to
real servers, VS Code inputs outside a notebook, and what bad input gets.

Each config is written by the test, copied from that client's documented example, with the
command swapped for a bundled demo server (or a test server that reports its environment).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import toolbench as tb
from toolbench._bench.clients.files import strip_jsonc
from toolbench._bench.clients.formats import translate
from toolbench._bench.clients.locations import client_configs, find_config, locations
from toolbench._bench.clients.reading import read_client_config
from toolbench._bench.servers.config import ConfigError, ConfigWarning, parse

ROOT = Path(__file__).parent.parent
PY = sys.executable
GEO = ["-m", "toolbench.demo.geo"]
WHOAMI = str(ROOT / "tests" / "servers" / "whoami_server.py")
ECHO = str(ROOT / "tests" / "servers" / "echo_server.py")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- where: tb.client_configs() ------------------------------------------------------------
def test_client_configs_lists_each_clients_documented_places_and_reads_only(
        tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()
    write(home / ".cursor" / "mcp.json", json.dumps(
        {"mcpServers": {"a": {"command": "x"}, "b": {"url": "http://h/mcp"}}}))
    write(cwd / ".vscode" / "mcp.json", '// mine\n{"servers": {"v": {"command": "y"},},}')
    write(home / ".codex" / "config.toml", '[mcp_servers.c]\ncommand = "z"\n')
    write(home / ".config" / "zed" / "settings.json", '{"theme": "x", /* c */ "context_servers"'
          ': {"z": {"command": "w"}}}')
    write(home / ".gemini" / "settings.json", "{ not json")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    mtimes = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    frame = client_configs(platform="linux", home=str(home), cwd=str(cwd), environ={})
    assert list(frame.columns) == ["client", "path", "exists", "servers", "format"]
    assert set(frame["client"]) == {"claude-desktop", "claude-code", "cursor", "vscode",
                                    "windsurf", "codex", "gemini", "zed"}
    found = frame[frame["exists"]].set_index("path")
    assert found.loc[str(home / ".cursor" / "mcp.json"), "servers"] == 2
    assert found.loc[str(cwd / ".vscode" / "mcp.json"), "format"] == "vscode"
    assert found.loc[str(home / ".codex" / "config.toml"), "format"] == "codex"
    assert found.loc[str(home / ".config" / "zed" / "settings.json"), "servers"] == 1
    broken = found.loc[str(home / ".gemini" / "settings.json")]
    assert pd.isna(broken["format"]) and pd.isna(broken["servers"])
    assert str(cwd / ".mcp.json") in set(frame["path"])  # Claude Code's project file
    # reading created nothing and changed nothing
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes


@pytest.mark.parametrize(("platform", "expected"), [
    ("darwin", "/h/Library/Application Support/Claude/claude_desktop_config.json"),
    ("win32", "/h/AppData/Roaming/Claude/claude_desktop_config.json"),
    ("linux", "/h/.config/Claude/claude_desktop_config.json"),
])
def test_each_os_has_its_own_locations(platform: str, expected: str) -> None:
    places = locations("claude-desktop", platform=platform, home="/h", cwd="/p", environ={})
    assert [path for _c, path, _p in places] == [os.path.normpath(expected)]
    vscode = [p for _c, p, _pr in locations("vscode", platform=platform, home="/h", cwd="/p",
                                            environ={"APPDATA": "/h/AppData/Roaming"})]
    assert vscode[0].endswith(os.path.normpath("Code/User/mcp.json"))
    assert vscode[-1] == os.path.normpath("/p/.vscode/mcp.json")


def test_codex_home_and_xdg_are_honoured() -> None:
    env = {"CODEX_HOME": "/c", "XDG_CONFIG_HOME": "/x"}
    paths = {c: p for c, p, project in locations(platform="linux", home="/h", cwd="/p",
                                                 environ=env) if not project}
    assert paths["codex"] == os.path.normpath("/c/config.toml")
    assert paths["zed"] == os.path.normpath("/x/zed/settings.json")


def test_an_unknown_client_and_a_missing_file_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown client 'cursr'.*cursor"):
        locations("cursr")
    with pytest.raises(FileNotFoundError, match="no windsurf config found; looked at"):
        find_config("windsurf", cwd=str(tmp_path))


# -- each format, read -----------------------------------------------------------------------
def test_jsonc_comments_and_trailing_commas_keep_line_numbers() -> None:
    text = '{\n  // a comment with "quotes"\n  "a": "// not a comment", /* b\n c */ "d": [1,],\n}'
    assert json.loads(strip_jsonc(text)) == {"a": "// not a comment", "d": [1]}
    assert strip_jsonc(text).count("\n") == text.count("\n")


def test_gemini_http_url_sse_url_timeout_in_ms_and_bare_variables() -> None:
    # https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md
    data = {"mcpServers": {
        "pythonTools": {"command": "python", "args": ["-m", "my_mcp_server"],
                        "env": {"DATABASE_URL": "$DB_CONNECTION_STRING"}, "timeout": 15000,
                        "trust": False},
        "httpServer": {"httpUrl": "http://localhost:3000/mcp"},
        "sseServer": {"url": "http://localhost:8080/sse"}}}
    read = read_client_config(data, client="gemini")
    servers = {s.name: s for s in parse(read, environ={"DB_CONNECTION_STRING": "pg://x"}).servers}
    assert servers["pythonTools"].options["timeout"] == 15.0
    assert servers["pythonTools"].options["env"] == {"DATABASE_URL": "pg://x"}
    assert servers["httpServer"].transport == "http"
    assert servers["sseServer"].transport == "sse"


def test_codex_keys_become_toolbenchs() -> None:
    # https://developers.openai.com/codex/mcp
    data = {"model": "o3", "mcp_servers": {
        "context7": {"command": "npx", "args": ["-y", "@upstash/context7-mcp"],
                     "env": {"MY_ENV_VAR": "MY_ENV_VALUE"}, "env_vars": ["PASS_ME", "ABSENT"],
                     "startup_timeout_sec": 20, "tool_timeout_sec": 45},
        "figma": {"url": "https://mcp.figma.com/mcp", "bearer_token_env_var": "FIGMA_TOKEN",
                  "http_headers": {"X-Figma-Region": "us-east-1"},
                  "env_http_headers": {"X-Key": "FIGMA_KEY"}},
        "off": {"command": "nope", "enabled": False}}}
    env = {"PASS_ME": "p4ss", "FIGMA_TOKEN": "t0ken-value", "FIGMA_KEY": "k3y-value"}
    parsed = parse(_read(data, env), environ=env)
    by = {s.name: s for s in parsed.servers}
    assert by["context7"].options["env"] == {"PASS_ME": "p4ss", "MY_ENV_VAR": "MY_ENV_VALUE"}
    assert by["context7"].options["connect_timeout"] == 20
    assert by["context7"].options["timeout"] == 45
    assert by["figma"].options["headers"] == {"X-Figma-Region": "us-east-1",
                                              "X-Key": "k3y-value",
                                              "Authorization": "Bearer t0ken-value"}
    assert parsed.disabled == ["off"]
    assert "t0ken-value" not in repr(by["figma"]) and "k3y-value" not in repr(by["figma"])
    assert parsed.unknown == []  # "model" is Codex's own setting, not an unknown key


def _read(data: dict[str, object], env: dict[str, str]) -> object:
    translated = translate(data, "config.toml", environ=env)
    from toolbench._bench.servers.config import ClientConfig

    made = ClientConfig({"mcpServers": translated.servers})
    made.source, made.label = "config.toml", translated.label
    return made


def test_zed_old_and_new_shapes_and_extension_servers() -> None:
    # https://zed.dev/docs/ai/mcp
    data = {"context_servers": {
        "new": {"source": "custom", "command": "some-command", "args": ["a1"], "env": {}},
        "old": {"command": {"path": "/bin/srv", "args": ["--x"], "env": {"K": "v"}},
                "settings": {}},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "B t"}},
        "ext": {"source": "extension", "settings": {"k": 1}},
        "off": {"command": "x", "enabled": False}}}
    with pytest.warns(ConfigWarning, match="left out 'ext' \\(a Zed extension's server"):
        read = read_client_config(data, client="zed")
    by = {s.name: s for s in parse(read).servers}
    assert by["new"].target == ["some-command", "a1"]
    assert by["old"].target == ["/bin/srv", "--x"] and by["old"].options["env"] == {"K": "v"}
    assert by["remote"].transport == "http"
    assert "ext" not in by and parse(read).disabled == ["off"]


def test_windsurf_server_url_and_unknown_keys_warn_once_by_path(tmp_path: Path) -> None:
    path = write(tmp_path / "mcp_config.json", json.dumps({"mcpServers": {
        "github": {"serverUrl": "https://api.githubcopilot.com/mcp/",
                   "headers": {"Authorization": "Bearer YOUR_GITHUB_PAT"},
                   "alwaysAllow": ["x"]}}}))
    parsed = parse(read_client_config(str(path)))
    assert parsed.servers[0].target == "https://api.githubcopilot.com/mcp/"
    assert parsed.unknown == ["$.mcpServers.github.alwaysAllow"]


def test_a_vscode_input_in_a_script_is_refused_by_id_and_answered_by_inputs(
        tmp_path: Path) -> None:
    path = write(tmp_path / ".vscode" / "mcp.json", """{
  // https://code.visualstudio.com/docs/copilot/customization/mcp-servers
  "inputs": [{"type": "promptString", "id": "perplexity-key",
              "description": "Perplexity API Key", "password": true}],
  "servers": {"Perplexity": {"type": "stdio", "command": "npx",
      "args": ["-y", "server-perplexity-ask", "${workspaceFolder}"],
      "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}}}
}""")
    with pytest.raises(ConfigError, match=r"inputs 'perplexity-key'.*nobody can be asked here"
                       ) as caught:
        read_client_config(str(path))
    assert str(path) in str(caught.value)
    read = read_client_config(str(path), inputs={"perplexity-key": "sk-very-secret-1"})
    (server,) = parse(read).servers
    assert server.options["env"] == {"PERPLEXITY_API_KEY": "sk-very-secret-1"}
    assert server.target[-1] == str(tmp_path)  # ${workspaceFolder}: above .vscode
    assert "sk-very-secret-1" in server.secrets and "sk-very-secret-1" not in repr(server)


def test_an_undeclared_input_is_an_error_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path / "mcp.json", json.dumps({"inputs": [{"id": "known"}], "servers": {
        "s": {"command": "x", "args": ["${input:missing-one}"]}}}))
    with pytest.raises(ConfigError, match=r"\$\{input:missing-one\} \(server 's'\) names no "
                       r"input declared.*'known'") as caught:
        read_client_config(str(path))
    assert "$.servers.s.args[0]" in str(caught.value)


# -- bad input ------------------------------------------------------------------------------
def test_malformed_json_and_toml_name_the_file_and_line(tmp_path: Path) -> None:
    bad_json = write(tmp_path / "mcp.json",
                     '{\n  "mcpServers": {\n    "a": {"command": "x" "args": []}\n  }\n}')
    with pytest.raises(ConfigError, match=r"not valid JSON: .* at line 3") as caught:
        read_client_config(str(bad_json))
    assert str(bad_json) in str(caught.value)
    bad_toml = write(tmp_path / "config.toml", '[mcp_servers.a]\ncommand = "x"\nargs = [1,, 2]\n')
    with pytest.raises(ConfigError, match=r"not valid TOML: .* at line 3 column") as caught:
        read_client_config(str(bad_toml))
    assert str(bad_toml) in str(caught.value)
    cut = write(tmp_path / "cut.toml", '[mcp_servers.a]\ncommand = "x"\nargs = [\n')
    with pytest.raises(ConfigError, match=r"at the end of the file \(line 3\)"):
        read_client_config(str(cut))


def test_a_trailing_comma_inside_a_string_is_kept() -> None:
    """Only a trailing comma of the JSON itself goes: a value's ``,]`` or ``, }`` (a
    password's, an argument's) is read as written."""
    text = '{"a": ["x,]", "y, }", "z\\",]"], // c\n "b": {"c": 1 , } , }'
    assert json.loads(strip_jsonc(text)) == {"a": ["x,]", "y, }", 'z",]'], "b": {"c": 1}}


def test_toml_nested_past_the_parsers_limit_names_the_file(tmp_path: Path) -> None:
    deep = write(tmp_path / ".codex" / "config.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="nested too deeply to read") as caught:
        read_client_config(str(deep))
    assert str(deep) in str(caught.value)
    frame = client_configs(platform="linux", home=str(tmp_path / "home"), cwd=str(tmp_path),
                           environ={})
    (row,) = frame[frame["path"] == str(deep)].to_dict("records")
    assert row["exists"] and row["format"] is None  # listed; load_config names the mistake


def test_a_missing_env_file_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / ".cursor" / "mcp.json", json.dumps({"mcpServers": {
        "s": {"command": "x", "envFile": "${workspaceFolder}/.env.nope"}}}))
    with pytest.raises(ConfigError, match=r"envFile '.*\.env\.nope' does not exist") as caught:
        read_client_config(str(path))
    assert "$.mcpServers.s.envFile" in str(caught.value)


def test_an_env_file_is_read_and_its_values_stay_hidden(tmp_path: Path) -> None:
    write(tmp_path / ".env", "# keys\nexport API_KEY='envfile-secret-9'\nMODE=fast # note\n")
    path = write(tmp_path / ".cursor" / "mcp.json", json.dumps({"mcpServers": {
        "s": {"command": "x", "envFile": ".env", "env": {"MODE": "slow"}}}}))
    (server,) = parse(read_client_config(str(path))).servers
    assert server.options["env"] == {"API_KEY": "envfile-secret-9", "MODE": "slow"}
    assert "envfile-secret-9" not in repr(server)


def test_a_file_of_no_known_format_names_what_it_found(tmp_path: Path) -> None:
    path = write(tmp_path / "x.toml", '[servers_of_mine.a]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match=r"no MCP servers found.*found 'servers_of_mine'"):
        read_client_config(str(path))
    json_path = write(tmp_path / "x.json", json.dumps({"mcpServer": {}}))
    with pytest.raises(ConfigError, match="did you mean 'mcpServers'"):
        read_client_config(str(json_path))


def test_a_switched_off_server_is_not_read_further(tmp_path: Path) -> None:
    path = write(tmp_path / "mcp.json", json.dumps({"mcpServers": {
        "off": {"command": "x", "disabled": True, "envFile": "/nope/.env"}}}))
    parsed = parse(read_client_config(str(path)))
    assert parsed.servers == [] and parsed.disabled == ["off"]


# -- connected: each client's format against real servers -----------------------------------
def _connect(path: Path, **kwargs: object) -> list[str]:
    with tb.Bench(timeout=60, connect_timeout=90) as bench, warnings.catch_warnings():
        warnings.simplefilter("error")
        table = bench.load_config(str(path), **kwargs)  # type: ignore[arg-type]
        assert set(table["status"]) == {"connected"}, table[["name", "error"]]
        assert bench.call("geo-distance", from_city="London", to_city="Paris").data == {
            "result": 343.557}
        return sorted(table["name"])


@pytest.mark.slow
@pytest.mark.parametrize("client", ["claude-desktop", "claude-code", "cursor", "windsurf",
                                    "gemini"])
def test_each_mcp_servers_client_connects_the_demo_server(tmp_path: Path, client: str) -> None:
    entry: dict[str, object] = {"command": PY, "args": GEO}
    if client == "claude-code":  # https://docs.claude.com/en/docs/claude-code/mcp
        entry = {"type": "stdio", "command": "${PY_FOR_TEST:-" + PY + "}", "args": GEO,
                 "env": {}}
    elif client == "cursor":  # https://cursor.com/docs/context/mcp
        entry = {"command": PY, "args": GEO, "env": {"HOME_COPY": "${env:HOME}"}}
    elif client == "gemini":  # gemini-cli docs/tools/mcp-server.md
        entry = {"command": PY, "args": GEO, "timeout": 60000, "cwd": str(tmp_path)}
    file = {"claude-desktop": "claude_desktop_config.json", "claude-code": ".mcp.json",
            "cursor": "mcp.json", "windsurf": "mcp_config.json", "gemini": "settings.json"}
    path = write(tmp_path / file[client], json.dumps({"mcpServers": {"geo": entry}}))
    assert _connect(path) == ["geo"]


@pytest.mark.slow
def test_vscode_zed_and_codex_files_connect_the_demo_server(tmp_path: Path) -> None:
    vscode = write(tmp_path / ".vscode" / "mcp.json", '{\n  // VS Code\n  "servers": {"geo": '
                   f'{{"type": "stdio", "command": {json.dumps(PY)}, "args": '
                   f'{json.dumps(GEO)}}},}},\n}}')
    assert _connect(vscode) == ["geo"]
    zed = write(tmp_path / "zed" / "settings.json", '{"theme": "One", // Zed\n'
                f'"context_servers": {{"geo": {{"source": "custom", "command": {json.dumps(PY)}'
                f', "args": {json.dumps(GEO)}, "env": {{}}}}}}}}')
    assert _connect(zed) == ["geo"]
    codex = write(tmp_path / ".codex" / "config.toml",
                  f'model = "o3"\n\n[mcp_servers.geo]\ncommand = {json.dumps(PY)}\n'
                  f'args = {json.dumps(GEO)}\nstartup_timeout_sec = 90\ntool_timeout_sec = 60\n'
                  '\n[mcp_servers.geo.env]\nGEO_NOTE = "x"\n\n[mcp_servers.off]\n'
                  'command = "nope"\nenabled = false\n')
    assert _connect(codex) == ["geo"]


@pytest.mark.slow
def test_a_client_by_name_reads_its_own_file(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path / "..")
    write(tmp_path / ".cursor" / "mcp.json", json.dumps({"mcpServers": {
        "geo": {"command": PY, "args": GEO}}}))
    with tb.Bench(connect_timeout=90) as bench:
        table = bench.load_config(client="cursor")
        assert list(table["name"]) == ["geo"] and list(table["status"]) == ["connected"]


@pytest.mark.slow
def test_an_input_answer_reaches_the_server_and_is_shown_nowhere(tmp_path: Path) -> None:
    secret = "pw-input-4471-secret"
    path = write(tmp_path / ".vscode" / "mcp.json", json.dumps({
        "inputs": [{"type": "promptString", "id": "acc-token-4471", "password": True}],
        "servers": {"echo": {"command": PY, "args": [ECHO],
                             "env": {"TOOLBENCH_TEST_SECRET": "${input:acc-token-4471}"}}}}))
    with tb.Bench(connect_timeout=90) as bench:
        table = bench.load_config(str(path), inputs={"acc-token-4471": secret})
        assert list(table["status"]) == ["connected"]
        # the server got the answer, not the placeholder text
        assert bench.call("echo-whoami").data["secret_len"] == len(secret)
        shown = repr(bench.servers.to_dict()) + repr(bench.records.to_dict()) + repr(bench)
        assert secret not in shown and "${input" not in shown


@pytest.mark.slow
def test_windsurf_gemini_and_zed_remote_urls_connect_over_loopback(tmp_path: Path) -> None:
    from serving import served_url

    script = ROOT / "tests" / "servers" / "big_catalog_http.py"
    with served_url(script, "--tools", "3", "--tiny") as url:
        files = {
            "mcp_config.json": {"mcpServers": {"w": {"serverUrl": url}}},  # Windsurf
            "settings.json": {"mcpServers": {"g": {"httpUrl": url, "timeout": 30000}}},
            "zed.json": {"context_servers": {"z": {"url": url, "headers": {"X-A": "b"}}}},
        }
        for name, data in files.items():
            path = write(tmp_path / name, json.dumps(data))
            with tb.Bench(connect_timeout=60) as bench:
                table = bench.load_config(str(path))
                assert list(table["status"]) == ["connected"], (name, table["error"].tolist())
                assert list(table["transport"]) == ["http"]
                assert len(bench.catalog()) == 3


def test_aload_config_does_not_ask_and_names_the_inputs(tmp_path: Path) -> None:
    import asyncio

    path = write(tmp_path / "mcp.json", json.dumps({
        "inputs": [{"id": "tok", "password": True}],
        "servers": {"s": {"command": "x", "env": {"T": "${input:tok}"}}}}))
    refused = r"inputs 'tok'.*aload_config and the toolbench command do not ask.*inputs=\{'tok'"
    with tb.Bench() as bench, pytest.raises(ConfigError, match=refused):
        asyncio.run(bench.aload_config(str(path)))


def test_claude_codes_file_adds_the_projects_local_servers_and_ignores_its_settings(
        tmp_path: Path) -> None:
    path = write(tmp_path / ".claude.json", json.dumps({
        "numStartups": 12, "mcpServers": {"user": {"command": "u"}},
        "projects": {str(tmp_path): {"mcpServers": {"local": {"type": "stdio",
                                                               "command": "l"}}}}}))
    translated = translate(json.loads(path.read_text()), str(path), cwd=str(tmp_path))
    assert sorted(translated.servers) == ["local", "user"] and translated.extra == {}


@pytest.mark.slow
def test_the_command_takes_vscode_inputs_as_options(tmp_path: Path) -> None:
    import subprocess

    path = write(tmp_path / ".vscode" / "mcp.json", json.dumps({
        "inputs": [{"id": "tok", "password": True}],
        "servers": {"echo": {"command": PY, "args": [ECHO],
                             "env": {"TOOLBENCH_TEST_SECRET": "${input:tok}"}}}}))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PY, "-m", "toolbench", "catalog", "--config", str(path), *args],
                              capture_output=True, text=True, timeout=180, cwd=tmp_path)

    refused = run()
    assert refused.returncode == 2 and "--input tok=..." in refused.stderr
    answered = run("--input", "tok=cli-secret-1")
    assert answered.returncode == 0, answered.stderr
    assert "echo-echo" in answered.stdout and "cli-secret-1" not in answered.stdout

"""The trust boundary: secrets never come back out, and who may reach a served Toolset.

Every value that came from ``${VAR}`` expansion (command, args, cwd, URL path and query, env,
headers), and every env and header value, must stay out of ``servers``, records, the journal,
reprs, warnings and error messages, including text the server or the SDK wrote. The servers
here are real processes that do their best to echo those values back.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

import toolbench as tb
from toolbench._bench.servers.config import parse
from toolbench._transports.toolset.serve import check_target, is_loopback

BOUND = 60.0

LEAKY = '''
import os, sys
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

server = MCPServer("leaky-" + os.environ.get("LEAK_ENV", ""))

def everything():
    return ("env=" + os.environ.get("LEAK_ENV", "") + " hdr=" + os.environ.get("LEAK_HDR", "")
            + " argv=" + " ".join(sys.argv[1:]) + " cwd=" + os.getcwd())

@server.tool()
def ok() -> str:
    """Answer plainly."""
    return "fine"

@server.tool()
def fail() -> str:
    """Fail, echoing every secret it was given."""
    raise ToolError("failed: " + everything())

@server.tool()
def rpc_error() -> str:
    """Answer with a JSON-RPC error that echoes every secret."""
    raise MCPError(-32000, "rpc: " + everything())

if __name__ == "__main__":
    mode = sys.argv[1]
    if os.environ.get("LEAK_DIE"):
        print("dying: " + everything(), file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "stdio":
        print("starting: " + everything(), file=sys.stderr, flush=True)
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]),
                   streamable_http_path=sys.argv[3])
'''

ENV_SECRET = "envS3CRET-aa11"
ARG_SECRET = "argS3CRET-bb22"
HDR_SECRET = "hdrS3CRET-cc33"
PATH_SECRET = "pathS3CRET-dd44"
QUERY_SECRET = "queryS3CRET-ee55"
DIR_SECRET = "dirS3CRET-ff66"
SECRETS = (ENV_SECRET, ARG_SECRET, HDR_SECRET, PATH_SECRET, QUERY_SECRET, DIR_SECRET)


def assert_clean(text: str, where: str) -> None:
    found = [s for s in SECRETS if s in text]
    assert not found, f"secret {found} shown in {where}: {text[:2000]}"


def shown_by(bench: tb.Bench) -> str:
    """Everything a bench shows about its servers and records, as one text."""
    records = bench.records.drop(columns=["text", "content", "structured"])
    parts = [str(bench.servers.to_dict("records")), str(records.to_dict("records")),
             repr(bench), str(bench._repr_mimebundle_())]
    for row in bench.connections.rows():
        parts.append(repr(row))
        if row.connection is not None:
            parts.append(repr(row.connection.client))
    return "\n".join(parts)


def error_text(exc: BaseException) -> str:
    """What a user sees for an exception: the whole traceback, chained causes included."""
    return "".join(traceback.format_exception(exc))


@pytest.fixture
def leaky(tmp_path: Path) -> Path:
    script = tmp_path / "leaky_server.py"
    script.write_text(LEAKY)
    (tmp_path / DIR_SECRET).mkdir()
    return script


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("T_ENV", ENV_SECRET)
    monkeypatch.setenv("T_ARG", ARG_SECRET)
    monkeypatch.setenv("T_HDR", HDR_SECRET)
    monkeypatch.setenv("T_PATH", PATH_SECRET)
    monkeypatch.setenv("T_QUERY", QUERY_SECRET)
    monkeypatch.setenv("T_DIR", str(tmp_path / DIR_SECRET))


def test_config_tracks_every_expanded_value_and_its_repr_hides_them() -> None:
    env = {"T_ENV": ENV_SECRET, "T_ARG": ARG_SECRET, "T_DIR": "/srv/" + DIR_SECRET,
           "T_PATH": PATH_SECRET, "T_QUERY": QUERY_SECRET, "T_HDR": HDR_SECRET}
    parsed = parse({"mcpServers": {
        "s": {"command": "run-${T_ARG}", "args": ["--key=${T_ARG}"], "cwd": "${T_DIR}",
              "env": {"A": "${T_ENV}", "LITERAL": "plain-literal-value"}},
        "h": {"url": "https://h.example/${T_PATH}/mcp?token=${T_QUERY}&v=${MISSING:-1.0}",
              "headers": {"Authorization": "Bearer ${T_HDR}"}},
    }}, environ=env)
    by = {s.name: s for s in parsed.servers}
    assert {ARG_SECRET, "/srv/" + DIR_SECRET, ENV_SECRET, "plain-literal-value"} <= by["s"].secrets
    assert {PATH_SECRET, QUERY_SECRET, HDR_SECRET, f"Bearer {HDR_SECRET}"} <= by["h"].secrets
    assert "1.0" not in by["h"].secrets  # a default is written in the file: not a secret
    for server in parsed.servers:
        assert_clean(repr(server), "ServerConfig repr")
        assert "plain-literal-value" not in repr(server)
    # A mistake found after expansion quotes the value as written, never the expanded one.
    with pytest.raises(tb.ConfigError) as info:
        parse({"mcpServers": {"h": {"url": "ftp://${T_PATH}/x?token=${T_QUERY}"}}}, environ=env)
    assert_clean(str(info.value), "ConfigError")
    assert "${T_PATH}" in str(info.value) and "token=..." in str(info.value)


@pytest.mark.slow
def test_stdio_server_echoing_env_argv_and_cwd_shows_no_secret(
        leaky: Path, secret_env: None, tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"
    config = {"mcpServers": {"leaky": {
        "command": sys.executable, "args": [str(leaky), "stdio", "${T_ARG}"],
        "cwd": "${T_DIR}", "env": {"LEAK_ENV": "${T_ENV}"}, "timeout": 30,
    }}}
    with tb.Bench(journal=journal) as bench:
        df = bench.load_config(config).set_index("name")
        assert df.loc["leaky", "status"] == "connected", df.loc["leaky", "error"]
        assert bench.call("leaky-ok").text == "fine"
        with pytest.raises(tb.ToolFailed) as failed:
            bench.call("leaky-fail")
        assert "[redacted]" in failed.value.detail
        assert_clean(error_text(failed.value), "ToolFailed")
        with pytest.raises(tb.TimedOut) as rpc:
            bench.call("leaky-rpc_error")
        assert "-32000" in str(rpc.value) and "[redacted]" in str(rpc.value)
        assert_clean(error_text(rpc.value), "JSON-RPC error and its traceback")
        records = bench.records
        assert list(records["error_type"]) == [None, "ToolFailed", "TimedOut"]
        # A failed call's text is an error message, redacted like the error (issue 27).
        assert ENV_SECRET not in records.iloc[1]["text"]
        assert "[redacted]" in records.iloc[1]["text"]
        assert_clean(shown_by(bench), "bench")
        assert_clean(str(bench.servers.loc[0, "server_name"]), "server_name")
    with sqlite3.connect(journal) as db:
        dumped = "\n".join(" ".join(map(str, row)) for row in db.execute(
            "SELECT * FROM sqlite_master"))
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            columns = [c[1] for c in db.execute(f"PRAGMA table_info({table})")]
            keep = [c for c in columns if c not in ("text", "content", "structured")]
            for row in db.execute(f"SELECT {', '.join(keep)} FROM {table}"):
                dumped += "\n" + " ".join(map(str, row))
    assert "ToolFailed" in dumped
    assert_clean(dumped, "journal")


@pytest.mark.slow
def test_stdio_server_that_dies_echoing_secrets_leaves_a_clean_failed_row(
        leaky: Path, secret_env: None) -> None:
    config = {"mcpServers": {
        "dies": {"command": sys.executable, "args": [str(leaky), "stdio", "${T_ARG}"],
                 "cwd": "${T_DIR}", "env": {"LEAK_ENV": "${T_ENV}", "LEAK_DIE": "1"}},
    }}
    with tb.Bench() as bench:
        with pytest.warns(tb.ConfigWarning, match="failed to start") as told:  # issue 37
            row = bench.load_config(config).set_index("name").loc["dies"]
        assert all(s not in str(w.message) for w in told for s in SECRETS)
        assert row["status"] == "failed"
        assert "dying:" in row["stderr_tail"] and "[redacted]" in row["stderr_tail"]
        assert "failed to start" in row["error"]
        assert_clean(shown_by(bench), "bench")
        # Directly too, the raised error (and what it chains) shows nothing.
        with pytest.raises(tb.Unreachable) as info:
            bench.connect("again", [sys.executable, str(leaky), "stdio", ARG_SECRET],
                          env={"LEAK_ENV": ENV_SECRET, "LEAK_DIE": "1"}, secrets=[ARG_SECRET])
        assert_clean(error_text(info.value), "Unreachable")
        assert_clean(shown_by(bench), "bench")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + BOUND
    while True:
        assert proc.poll() is None, "the server exited before listening"
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.05)


@pytest.fixture
def leaky_http(leaky: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = _free_port()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, str(leaky), "http", str(port), f"/{PATH_SECRET}/mcp"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            # The header secret the bench sends, and the URL path in argv, are echoed back.
            env={"PATH": "/usr/bin:/bin", "LEAK_ENV": "public", "LEAK_HDR": HDR_SECRET},
        )
        try:
            _wait_for_port(proc, port)
            yield port, proc
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


@pytest.mark.slow
def test_http_server_with_secret_url_path_query_and_headers(
        leaky_http: tuple[int, subprocess.Popen[bytes]], secret_env: None) -> None:
    port, proc = leaky_http
    config = {"mcpServers": {
        "web": {"url": f"http://127.0.0.1:{port}/${{T_PATH}}/mcp?token=${{T_QUERY}}",
                "headers": {"Authorization": "Bearer ${T_HDR}"}, "timeout": 30},
        # The wrong path: the SDK's HTTP error quotes the whole URL.
        "lost": {"url": f"http://127.0.0.1:{port}/${{T_PATH}}/nope?token=${{T_QUERY}}",
                 "connect_timeout": 20},
    }}
    with tb.Bench() as bench:
        with pytest.warns(tb.ConfigWarning, match="failed to start") as told:  # issue 37
            df = bench.load_config(config).set_index("name")
        assert all(s not in str(w.message) for w in told for s in SECRETS)
        assert df.loc["web", "status"] == "connected", df.loc["web", "error"]
        assert df.loc["lost", "status"] == "failed" and df.loc["lost", "error"]
        assert_clean(shown_by(bench), "bench")
        with pytest.raises(tb.ToolFailed) as failed:
            bench.call("web-fail")
        assert_clean(error_text(failed.value), "ToolFailed over HTTP")
        with pytest.raises(tb.TimedOut) as rpc:
            bench.call("web-rpc_error")
        assert_clean(str(rpc.value), "JSON-RPC error over HTTP")
        with pytest.raises(tb.Unreachable) as direct:
            bench.connect("direct", f"http://127.0.0.1:{port}/{PATH_SECRET}/x?k={QUERY_SECRET}",
                          secrets=[PATH_SECRET, QUERY_SECRET], connect_timeout=20)
        assert_clean(error_text(direct.value), "direct connect error")
        proc.kill()  # the server dies (a graceful stop would wait on the client's stream)
        proc.wait(10)
        with pytest.raises(tb.ToolError) as gone:
            bench.call("web-ok")
        assert_clean(error_text(gone.value), "call after the server died")
        assert_clean(shown_by(bench), "bench")


# -- who may reach a served Toolset (item 10) ----------------------------------------------

@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.5", "[::1]"])
def test_loopback_hosts_need_no_lists(host: str) -> None:
    assert is_loopback(host)
    check_target("streamable-http", host, 8000)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "tools.example.org"])
def test_other_hosts_require_allowed_hosts_and_origins(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ValueError) as info:
        check_target("streamable-http", host, 8000)
    message = str(info.value)
    assert repr(host) in message and "allowed_hosts=" in message
    assert "allowed_origins=" in message and "not a loopback" in message
    with pytest.raises(ValueError, match=r"needs allowed_origins=\[\.\.\.\]") as only:
        check_target("streamable-http", host, 8000, allowed_hosts=["h:8000"])
    assert "allowed_hosts=[" not in str(only.value).split("needs", 1)[1].split(":", 1)[0]
    check_target("streamable-http", host, 8000, allowed_hosts=["h:8000"], allowed_origins=[])


def test_bad_allowed_lists_are_refused() -> None:
    with pytest.raises(ValueError, match="list of strings"):
        check_target("streamable-http", "0.0.0.0", 1, allowed_hosts="h:1", allowed_origins=[])
    with pytest.raises(ValueError, match="every request would be refused"):
        check_target("streamable-http", "0.0.0.0", 1, allowed_hosts=[], allowed_origins=[])
    with pytest.raises(ValueError, match="non-empty strings"):
        check_target("streamable-http", "0.0.0.0", 1, allowed_hosts=[""], allowed_origins=[])
    with pytest.raises(ValueError, match="not to 'stdio'"):
        check_target("stdio", "127.0.0.1", 1, allowed_hosts=["h"])


@pytest.mark.anyio
async def test_serve_refuses_a_public_host_before_binding() -> None:
    ts = tb.Toolset("exposed", connect_grace=None)
    port = _free_port()
    with pytest.raises(ValueError, match=r"'0\.0\.0\.0'.*allowed_hosts"):
        await ts.serve("streamable-http", host="0.0.0.0", port=port)
    with socket.socket() as s:  # nothing was bound: the port is still free
        s.bind(("0.0.0.0", port))


SERVE = '''
import sys
sys.path.insert(0, {root!r})
from toolbench import Toolset
ts = Toolset("exposed", connect_grace=None)

@ts.tool("ping", "Answer pong.")
def ping(data, ctx):
    return "pong"

host, port = sys.argv[1], int(sys.argv[2])
hosts = [h for h in sys.argv[3].split(",") if h] if len(sys.argv) > 3 else None
origins = [o for o in sys.argv[4].split(",") if o] if len(sys.argv) > 4 else None
ts.run("streamable-http", host=host, port=port, allowed_hosts=hosts, allowed_origins=origins)
'''


def _status(port: int, host_header: str, origin: str | None = None,
            connect: str = "127.0.0.1") -> int:
    """The HTTP status a real initialize request gets with these Host and Origin headers."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}).encode()
    headers = {"Host": host_header, "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if origin is not None:
        headers["Origin"] = origin
    request = urllib.request.Request(f"http://{connect}:{port}/mcp", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=BOUND) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.fixture
def serve_toolset(tmp_path: Path) -> Iterator[Callable[..., int]]:
    script = tmp_path / "serve.py"
    script.write_text(SERVE.format(root=str(Path(__file__).resolve().parents[1])))
    procs: list[subprocess.Popen[bytes]] = []

    def start(host: str, *lists: str, connect: str = "127.0.0.1") -> int:
        port = _free_port()
        proc = subprocess.Popen([sys.executable, str(script), host, str(port), *lists],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        procs.append(proc)
        _wait_for_port(proc, port, connect)
        return port

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.mark.slow
def test_public_host_checks_host_and_origin_headers(serve_toolset: Callable[..., int]) -> None:
    port = serve_toolset("0.0.0.0", "tools.example.org:*", "https://app.example.org")
    assert _status(port, f"tools.example.org:{port}") == 200
    assert _status(port, f"tools.example.org:{port}", "https://app.example.org") == 200
    assert _status(port, f"evil.example:{port}") == 421  # a rebinding attacker's Host
    assert _status(port, f"127.0.0.1:{port}") == 421  # not listed, so not allowed
    assert _status(port, f"tools.example.org:{port}", "https://evil.example") == 403
    # A real MCP client that sends the allowed Host reaches the tools.
    async def ping() -> str:
        async with tb.McpClient(f"http://127.0.0.1:{port}/mcp", name="exposed",
                                headers={"Host": f"tools.example.org:{port}"},
                                connect_timeout=30) as client:
            return (await client.call(tb.ToolId("exposed", "ping"), {})).text

    assert anyio.run(ping) == "pong"


@pytest.mark.slow
def test_loopback_keeps_the_sdk_protection(serve_toolset: Callable[..., int]) -> None:
    port = serve_toolset("127.0.0.1")
    assert _status(port, f"127.0.0.1:{port}") == 200
    assert _status(port, f"localhost:{port}", "http://localhost:3000") == 200
    assert _status(port, f"evil.example:{port}") == 421
    assert _status(port, f"127.0.0.1:{port}", "https://evil.example") == 403
    other = serve_toolset("127.0.0.5", connect="127.0.0.5")  # loopback the SDK does not know
    assert _status(other, f"127.0.0.5:{other}", connect="127.0.0.5") == 200
    assert _status(other, f"evil.example:{other}", connect="127.0.0.5") == 421


# -- a secret cut before redaction, or in another case -----------------------------------------
SECRET32 = "S3cr3tT0ken-0123456789abcdefghij"


def test_garbage_is_redacted_before_it_is_cut() -> None:
    from toolbench._core.redact import Redactor
    from toolbench._transports.wire.stdio import GARBAGE_QUOTE, _Flow, _Reader

    reader = _Reader(None, None, 1 << 20, _Flow(), redact=Redactor([SECRET32]))  # type: ignore[arg-type]
    line = ("x" * 185 + SECRET32 + "y" * GARBAGE_QUOTE).encode()  # the cut at 200 splits it
    error = reader._parse(line)
    assert isinstance(error, ValueError)
    assert SECRET32[:10] not in str(error) and "[redacted]" in str(error)


def test_a_stderr_window_never_starts_mid_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolbench._transports.wire import stderr as _stderr

    log = _stderr.StderrLog("t")
    try:
        monkeypatch.setattr(_stderr, "TAIL_BYTES", 40)
        f = log.file()
        f.write(f"token={SECRET32}\nshort line\n")
        f.flush()
        tail = log.tail()
        assert "short line" in tail
        assert SECRET32[-10:] not in tail  # the window began inside the secret's line
    finally:
        log.delete()


def test_a_secret_in_a_url_host_is_redacted_whatever_its_case() -> None:
    from toolbench._core.redact import Redactor

    redact = Redactor(["MixedCaseTenant42"])
    assert redact("https://mixedcasetenant42.example.com/x") == "https://[redacted].example.com/x"


from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError as ServerToolError  # noqa: E402

SECRET_SERVER_VALUE = "Zq7SecretValue"


def test_a_tool_named_after_a_secret_and_its_error_text_never_show(tmp_path: Path) -> None:
    server = MCPServer("leaky")

    @server.tool(name=f"get-{SECRET_SERVER_VALUE}")
    async def leak() -> str:
        raise ServerToolError(f"failed with {SECRET_SERVER_VALUE} inside")

    journal = tmp_path / "calls.sqlite"
    with tb.Bench(journal=journal, log_level="info") as bench:
        bench.connect("leaky", server, secrets=[SECRET_SERVER_VALUE])
        with pytest.raises(tb.ToolFailed):
            bench.call(f"leaky-get-{SECRET_SERVER_VALUE}")
        shown = str(bench.records.to_dict("records")) + str(bench.logs.to_dict("records"))
        assert "[redacted]" in shown
        assert SECRET_SERVER_VALUE.lower() not in shown.lower()
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert SECRET_SERVER_VALUE.lower().encode() not in on_disk.lower()

"""The doctor names the step that fails, for every kind of failure, with real processes and
real loopback servers; it bounds every wait, escapes what servers say and hides secrets."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from serving import free_port, served_url

import toolbench as tb
from toolbench._bench.doctor.diagnose import step_timeout
from toolbench._bench.doctor.steps import OK, WARN, Diagnosis

ROOT = Path(__file__).parent.parent
PY = sys.executable
SERVERS = ROOT / "tests" / "servers"

pytestmark = pytest.mark.slow


def doctor(entry: dict[str, Any], timeout: float = 30.0) -> Diagnosis:
    with tb.Bench() as bench:
        return bench.doctor("s", config={"mcpServers": {"s": entry}}, timeout=timeout)


def steps(diagnosis: Diagnosis) -> dict[str, str]:
    return {step.name: step.status for step in diagnosis.steps}


# -- stdio ----------------------------------------------------------------------------------
def test_a_working_stdio_server_passes_every_step_and_says_its_era() -> None:
    found = doctor({"command": PY, "args": ["-m", "toolbench.demo.geo"]}, timeout=90)
    assert found.ok and found.failed is None
    assert steps(found) == {"command found": OK, "process started": OK,
                            "stdout speaks JSON-RPC": OK, "initialize answered": OK,
                            "tools listed": OK}
    assert "handshake era, protocol '2025-11-25'" in str(found)
    assert "5 tool(s): distance" in str(found)


def test_a_2026_only_server_is_found_through_server_discover() -> None:
    found = doctor({"command": PY, "args": [str(SERVERS / "modern_only_server.py")]})
    assert found.ok, str(found)
    assert steps(found)["server/discover answered"] == OK
    assert "2026 era" in str(found) and "1 tool(s): echo" in str(found)


def test_a_missing_command_says_where_it_looked() -> None:
    found = doctor({"command": "no-such-mcp-server-xyz"})
    assert found.failed is not None and found.failed.name == "command found"
    assert "looked on PATH (" in found.failed.evidence
    assert str(Path(PY).parent) in found.failed.evidence  # this Python's scripts folder
    # a PATH given in env is a secret like every env value: not shown
    hidden = doctor({"command": "no-such-mcp-server-xyz", "env": {"PATH": "/nowhere/bin"}})
    assert "/nowhere/bin" not in str(hidden) and "[redacted]" in str(hidden)
    assert [s.name for s in found.steps] == ["command found"]


def test_a_process_that_exits_at_once_shows_its_code_and_stderr() -> None:
    found = doctor({"command": PY, "args": ["-c", "import sys; sys.stderr.write('no config "
                                            "file given'); sys.exit(3)"]})
    assert found.failed is not None and found.failed.name == "stdout speaks JSON-RPC"
    assert "exited (code 3)" in found.failed.evidence
    assert "no config file given" in found.failed.evidence


def test_logs_on_stdout_are_named_and_a_server_that_still_answers_is_a_warning() -> None:
    code = ("print('Starting the server on stdio...', flush=True)\n"
            "import runpy; runpy.run_module('toolbench.demo.geo', run_name='__main__')")
    found = doctor({"command": PY, "args": ["-c", code]}, timeout=90)
    assert found.ok
    assert steps(found)["stdout speaks JSON-RPC"] == WARN
    assert "Starting the server on stdio" in str(found)


def test_logs_only_on_stdout_fail_the_json_rpc_step() -> None:
    code = "import time\nprint('ready!', flush=True)\ntime.sleep(60)"
    found = doctor({"command": PY, "args": ["-c", code]}, timeout=2)
    assert found.failed is not None and found.failed.name == "stdout speaks JSON-RPC"
    assert "no JSON-RPC within 2 s" in found.failed.evidence and "ready!" in found.failed.evidence


def test_a_server_that_never_answers_is_bounded() -> None:
    found = doctor({"command": PY, "args": ["-c", "import time; time.sleep(60)"]}, timeout=1.5)
    assert found.failed is not None and found.failed.name == "stdout speaks JSON-RPC"
    assert "silent: no answer to initialize within 1.5 s" in found.failed.evidence


def test_each_step_waits_as_long_as_connect_would_unless_told() -> None:
    # A doctor stricter than connect failed, under load, a server that connect accepts.
    silent = {"command": PY, "args": ["-c", "import time; time.sleep(60)"]}
    with tb.Bench(connect_timeout=1.25) as bench:  # the bench's bound
        found = bench.doctor("s", config={"mcpServers": {"s": silent}})
    assert found.failed is not None
    assert "no answer to initialize within 1.25 s" in found.failed.evidence
    with tb.Bench() as bench:  # the server's own bound comes first
        found = bench.doctor("s", config={"mcpServers": {"s": {**silent,
                                                                "connect_timeout": 1.75}}})
    assert found.failed is not None
    assert "no answer to initialize within 1.75 s" in found.failed.evidence
    assert step_timeout(3.0, {"connect_timeout": 9}, 30.0) == 3.0  # the caller's, first
    assert step_timeout(None, {"connect_timeout": "soon"}, 30.0) == 30.0


def test_cat_is_not_mcp() -> None:
    found = doctor({"command": "cat"})
    assert found.failed is not None
    assert "echoes its input (like cat); it is not an MCP server" in found.failed.evidence


def test_what_a_server_prints_is_escaped_and_its_secrets_hidden() -> None:
    code = ("import os, time\nprint('<script>alert(1)</script>', os.environ['API_KEY'], "
            "flush=True)\ntime.sleep(60)")
    found = doctor({"command": PY, "args": ["-c", code], "env": {"API_KEY": "sk-doctor-777"}},
                   timeout=1.5)
    assert "sk-doctor-777" not in str(found) and "[redacted]" in str(found)
    html = found._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "sk-doctor-777" not in html and "✘" in html


# -- HTTP -----------------------------------------------------------------------------------
class _NotFound(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "9")
        self.end_headers()
        self.wfile.write(b"not found")

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def not_found_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_working_http_server_passes_every_step() -> None:
    with served_url(SERVERS / "big_catalog_http.py", "--tools", "4", "--tiny") as url:
        found = doctor({"url": url})
    assert found.ok, str(found)
    assert steps(found) == {"name resolved": OK, "TCP connect": OK, "TLS": "skip",
                            "HTTP status": OK, "authorization": "skip", "MCP answered": OK,
                            "tools listed": OK}
    assert "4 tool(s)" in str(found)


@pytest.mark.parametrize("code", [-32020, -32022])
def test_a_2026_only_http_server_is_found_through_server_discover(code: int) -> None:
    from servers.modern_only_http_server import serve_in_thread

    with serve_in_thread(code) as (url, seen):
        found = doctor({"url": url})
    assert found.ok, str(found)
    assert seen == ["initialize", "server/discover", "tools/list"]
    assert "2026 era" in str(found) and "tool(s): echo" in str(found)


def test_a_name_that_does_not_resolve() -> None:
    found = doctor({"url": "http://no-such-host.invalid/mcp"}, timeout=5)
    assert found.failed is not None and found.failed.name == "name resolved"


def test_a_refused_port_fails_tcp() -> None:
    found = doctor({"url": f"http://127.0.0.1:{free_port()}/mcp"})
    assert found.failed is not None and found.failed.name == "TCP connect"
    assert "nothing listens there" in found.failed.evidence


def test_a_404_fails_the_http_status_and_suggests_the_path() -> None:
    with not_found_server() as port:
        found = doctor({"url": f"http://127.0.0.1:{port}/wrong"})
    assert found.failed is not None and found.failed.name == "HTTP status"
    assert "404" in found.failed.evidence and "/mcp" in found.failed.evidence


def test_tls_to_a_plain_port_fails_the_tls_step() -> None:
    with not_found_server() as port:
        found = doctor({"url": f"https://127.0.0.1:{port}/mcp"}, timeout=5)
    assert found.failed is not None and found.failed.name == "TLS", str(found)
    assert steps(found)["TCP connect"] == OK


def test_a_401_shows_the_resource_metadata(tmp_path: Path) -> None:
    with open(tmp_path / "stderr.txt", "w") as err:
        server = subprocess.Popen([PY, "-m", "toolbench.demo.protected", "--port", "0"],
                                  stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[1]
        found = doctor({"url": url, "headers": {"Authorization": "Bearer wrong-token-99"}})
        signing = doctor({"url": url, "auth": "oauth"})
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()
    assert found.failed is not None and found.failed.name == "authorization", str(found)
    assert "401" in found.failed.evidence and "oauth-protected-resource" in found.failed.evidence
    assert "authorization servers ['http://127.0.0.1:" in found.failed.evidence
    assert "wrong-token-99" not in str(found)
    # configured to sign in: the 401 is expected, a warning (the doctor does not sign in)
    assert signing.ok and steps(signing)["authorization"] == WARN
    assert "auth is configured" in str(signing)


# -- from the bench: a failed connect points at the doctor ---------------------------------
def test_a_failed_connect_names_the_doctor_which_then_diagnoses_the_row() -> None:
    with tb.Bench(connect_timeout=20) as bench:
        with pytest.raises(tb.Unreachable, match=r"run bench.doctor\('broken'\) to see which "
                           "step failed"):
            bench.connect("broken", [PY, "-c", "import sys; sys.exit(5)"])
        found = bench.doctor("broken")
        assert found.failed is not None and "exited (code 5)" in found.failed.evidence
        assert bench.servers.set_index("name").loc["broken", "status"] == "failed"
        with pytest.raises(KeyError, match="no server 'other' on this bench"):
            bench.doctor("other")


def test_load_configs_failure_warning_names_the_doctor() -> None:
    config = {"mcpServers": {"gone": {"command": PY, "args": ["-c", "raise SystemExit(2)"]}}}
    with tb.Bench(connect_timeout=30) as bench, pytest.warns(
            tb.ConfigWarning, match=r"1 of 1 servers.*bench.doctor\('gone'\) shows which step"):
        bench.load_config(config)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


# -- what a server does after it answered: never an exception, every wait bounded -----------
def test_a_server_that_stops_reading_after_initialize_fails_a_step_not_the_doctor() -> None:
    """It answers ``initialize`` and closes its stdin: the doctor's next write meets a broken
    pipe, which is the failed step's evidence, not an exception out of ``bench.doctor``."""
    code = ("import json, os, sys, time\n"
            "request = json.loads(sys.stdin.readline())\n"
            "os.close(0)\n"
            "print(json.dumps({'jsonrpc': '2.0', 'id': request['id'], 'result': {"
            "'protocolVersion': '2025-11-25', 'capabilities': {}, "
            "'serverInfo': {'name': 'deaf', 'version': '1'}}}), flush=True)\n"
            "time.sleep(30)")
    found = doctor({"command": PY, "args": ["-c", code]})
    assert steps(found)["initialize answered"] == OK
    assert found.failed is not None and found.failed.name == "tools listed"
    assert "stopped reading its stdin" in found.failed.evidence


def test_json_nested_past_the_parsers_limit_is_a_log_line_not_an_exception() -> None:
    code = ("import sys, time\nsys.stdin.readline()\n"
            "print('[' * 5000 + ']' * 5000, flush=True)\ntime.sleep(30)")
    found = doctor({"command": PY, "args": ["-c", code]}, timeout=1.5)
    assert found.failed is not None and found.failed.name == "stdout speaks JSON-RPC"
    assert "printed 1 non-JSON line(s)" in found.failed.evidence


class _Endless(BaseHTTPRequestHandler):
    """Answers 200 and then a JSON body that never ends, a byte at a time: each read is
    quick, so only a bound on the whole answer ends it."""

    def do_POST(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(b'{"jsonrpc": "2.0", "id": 1, "result": "')
            while True:
                self.wfile.write(b"x" * 64)
                self.wfile.flush()
                threading.Event().wait(0.01)

    def log_message(self, *args: Any) -> None:
        pass


def test_an_answer_that_never_ends_is_bounded() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        found = doctor({"url": f"http://127.0.0.1:{server.server_address[1]}/mcp"},
                       timeout=2)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert found.failed is not None and found.failed.name == "HTTP status"
    assert "within 2 s" in found.failed.evidence


class _DropsDiscover(BaseHTTPRequestHandler):
    """A 2026-only answer to ``initialize`` (HTTP 400, -32020), then ``server/discover``'s
    connection closed without a word."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("MCP-Protocol-Version"):
            self.close_connection = True
            return
        body = b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "no"}}'
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_2026_server_that_drops_server_discover_fails_that_step() -> None:
    """The 2026 path's second request, on a connection the server drops: the step fails with
    what httpx saw, never an exception out of the doctor."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DropsDiscover)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        found = doctor({"url": f"http://127.0.0.1:{server.server_address[1]}/mcp"})
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert found.failed is not None and found.failed.name == "MCP answered", str(found)
    assert "RemoteProtocolError" in found.failed.evidence


def test_a_chatty_stdout_is_counted_not_kept_whole() -> None:
    """A server that prints thousands of log lines before (or instead of) JSON-RPC: the
    doctor keeps the first few as evidence and counts the rest, whatever their number."""
    import anyio

    from toolbench._bench.doctor.stdio import KEPT_LOGS, _Lines

    async def read() -> _Lines:
        process = await anyio.open_process(
            [PY, "-c", "for i in range(5000): print('log line', i, 'x' * 500)"],
            stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        async with process:
            lines = _Lines(process)
            assert await lines.message() is None  # the end of its output
        return lines

    lines = anyio.run(read)
    assert lines.log_count == 5000 and len(lines.logs) == KEPT_LOGS
    assert lines.logs[0].startswith("log line 0 ")


@pytest.mark.parametrize("timeout", [-1, 0, float("nan"), "10"])
def test_a_bad_timeout_is_refused_naming_it(timeout: Any) -> None:
    with tb.Bench() as bench, pytest.raises(ValueError, match=r"invalid timeout .*: a "
                                            r"positive number of seconds"):
        bench.doctor("s", config={"mcpServers": {"s": {"command": "x"}}}, timeout=timeout)

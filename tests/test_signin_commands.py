"""``toolbench auth login / logout / list`` as a person runs them: real processes, the
protected demo server, a "browser" that follows the printed link."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest
from oauth_glue import follow, protected_server

from toolbench._bench.signin_commands import describe
from toolbench._transports.auth.tokens import Record

pytestmark = pytest.mark.slow  # every test starts processes


def _toolbench(*args: str, store: Path, stdin: str | None = None,
               timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolbench", "auth", *args, "--store",
                           str(store)], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _login(url: str, store: Path, browser: str) -> tuple[int, str, str, list[str]]:
    """``auth login`` with a person: ``browser`` is "loopback" (the tab reaches the listener)
    or "pasted" (the person pastes a wrong address, then the right one, on stdin)."""
    proc = subprocess.Popen([sys.executable, "-m", "toolbench", "auth", "login", url,
                             "--timeout", "60", "--store", str(store)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
    lines: list[str] = []

    def person() -> None:
        assert proc.stdin is not None and proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "/authorize?" in line:
                link = line.strip()
                redirect = unquote(parse_qs(urlsplit(link).query)["redirect_uri"][0])
                back = follow(link, until=redirect)
                if browser == "loopback":
                    httpx.get(back, timeout=10)
                else:
                    proc.stdin.write(back.replace("state=", "state=old", 1) + "\n")
                    proc.stdin.write(back + "\n")
                    proc.stdin.flush()

    reader = threading.Thread(target=person, daemon=True)
    reader.start()
    try:
        out = proc.stdout.read()
        code = proc.wait(90)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
    reader.join(10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    return code, out, "".join(lines), lines


@pytest.mark.timeout(300)  # five processes start and import toolbench: slow on a busy box
@pytest.mark.parametrize("browser", ["loopback", "pasted"])
def test_login_list_logout(tmp_path: Path, browser: str) -> None:
    with protected_server() as url:
        code, out, err, _ = _login(url, tmp_path, browser)
        assert code == 0, err
        assert re.search(rf"signed in to {re.escape(url)}: oauth \(expires in (59|60) min\)",
                         out), out  # (59 when the box is slow)
        if browser == "pasted":
            assert "Not taken: this address belongs to another sign-in" in err
            assert "Received the sign-in (pasted)" in err
        else:
            assert "Received the sign-in (browser redirect)" in err
        listed = _toolbench("list", store=tmp_path)
        assert listed.returncode == 0
        text = listed.stdout
        assert "issuer" in text and "resource" in text and "expires" in text
        base = url.removesuffix("/mcp")
        assert re.search(rf"{re.escape(base)}\S*\s+{re.escape(url)}\s+oauth\s+signed in, "
                         r"expires in (59|60) min", text), text
        stored = "".join(p.read_text() for p in tmp_path.glob("*.json"))
        tokens = re.findall(r'"(?:access_token|refresh_token)": "([^"]+)"', stored)
        assert len(tokens) == 2
        for token in tokens:  # nothing printed anywhere carries a token
            assert token not in text and token not in out and token not in err
        again = _toolbench("logout", url, store=tmp_path)
        assert again.returncode == 0 and f"forgot 1 stored sign-in(s) for {url}" in again.stdout
        assert "no stored sign-ins" in _toolbench("list", store=tmp_path).stdout
        assert "no stored sign-in for" in _toolbench("logout", url, store=tmp_path).stdout


def test_login_that_nobody_finishes_ends_within_its_timeout(tmp_path: Path) -> None:
    with protected_server() as url:
        started = time.monotonic()
        done = _toolbench("login", url, "--timeout", "2", store=tmp_path, stdin="")
        took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert "error: Unreachable" in done.stderr and "within timeout=2 s" in done.stderr
    assert took < 40  # 2 s, with a wide margin for the interpreter and the server


def test_login_with_a_non_url_is_a_usage_error(tmp_path: Path) -> None:
    done = _toolbench("login", "not-a-url", store=tmp_path)
    assert done.returncode == 2
    assert "'not-a-url' is not a server address" in done.stderr


def test_list_names_an_unreadable_file_and_never_a_token(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    done = _toolbench("list", store=tmp_path)
    assert done.returncode == 0
    assert "broken.json" in done.stdout


def test_describe_states() -> None:
    now = 1_000_000.0
    signed = Record("https://s/mcp", "https://as", {"client_id": "c"},
                    {"access_token": "A", "refresh_token": "R"}, now + 600)
    assert describe(signed, now)[:2] == ("oauth", "signed in, expires in 10 min")
    assert describe(Record("u", "i", {"client_id": "c"}, {"access_token": "A",
                                                          "refresh_token": "R"}, now - 1),
                    now)[1] == "expired (refreshes on the next call)"
    assert describe(Record("u", "i", {"client_id": "c"}), now)[1] == "needs sign-in"
    assert "A" not in "".join(describe(signed, now)[1:])

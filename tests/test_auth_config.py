"""A config file's ``"auth"`` key, end to end: ``bench.load_config("mcp.json")`` signs in to the
real protected server of tests/servers/oauth_server.py through the default ``authorize`` step
(outside a kernel: the terminal's, which prints the link and waits on the loopback listener).

The test plays the person: when the link is printed it opens it in a "browser" that follows
the authorization server's redirect to the loopback redirect URI, as a browser on this
machine would. Nothing is passed in code but the file's path.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from servers.oauth_server import Provider, serve

import toolbench as tb

LINK = re.compile(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)")


@pytest.fixture
def server() -> Iterator[tuple[str, Provider]]:
    with serve() as found:
        yield found


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "data"
    monkeypatch.setenv("TOOLBENCH_DATA_DIR", str(folder))
    return folder


class Person(io.StringIO):
    """stderr, read by a person: a printed sign-in link is opened in a browser (a thread)
    that follows the authorization server's redirect to the loopback listener."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []
        self.landed: list[str] = []  # the pages the loopback listener answered
        self.threads: list[threading.Thread] = []

    def write(self, text: str) -> int:
        for link in LINK.findall(text):
            self.opened.append(link)
            thread = threading.Thread(target=self._browse, args=(link,), daemon=True)
            thread.start()
            self.threads.append(thread)
        return super().write(text)

    def _browse(self, link: str) -> None:
        with httpx2.Client(timeout=20, follow_redirects=False) as browser:
            back = str(browser.get(link).headers["location"])
            for _ in range(100):  # the listener starts beside the printed link
                try:
                    self.landed.append(browser.get(back).text)
                    return
                except httpx2.ConnectError:
                    threading.Event().wait(0.05)


def _write(path: Path, url: str, auth: object) -> Path:
    path.write_text(json.dumps({"mcpServers": {"p": {"url": url, "auth": auth}}}))
    return path


def test_a_config_file_signs_in_and_the_next_bench_reuses_the_stored_tokens(
        server: tuple[str, Provider], tmp_path: Path, data_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    url, provider = server
    person = Person()
    monkeypatch.setattr("sys.stderr", person)
    config = _write(tmp_path / "mcp.json", url, "oauth")
    with tb.Bench() as bench:
        table = bench.load_config(config, progress=False)
        assert list(table["status"]) == ["connected"], table.to_dict("records")
        assert table.iloc[0]["auth"].startswith("oauth (expires in ")
        assert "mcp" in bench.call("p-whoami").text
    for thread in person.threads:
        thread.join(10)
    assert len(person.opened) == 1 and provider.authorized == 1
    assert "You can close this tab" in person.landed[0]
    assert "Received the sign-in (browser redirect)" in person.getvalue()
    assert len(list((data_dir / "oauth").glob("*.json"))) == 1
    with tb.Bench() as bench:  # the same file again: the stored sign-in, no person
        table = bench.load_config(config, progress=False)
        assert list(table["status"]) == ["connected"]
        assert "mcp" in bench.call("p-whoami").text
    assert len(person.opened) == 1 and provider.authorized == 1
    shown = person.getvalue()
    for secret in provider.issued:
        assert secret not in shown


def test_a_config_object_with_expanded_fields_and_a_memory_store(
        server: tuple[str, Provider], tmp_path: Path, data_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    url, provider = server
    person = Person()
    monkeypatch.setattr("sys.stderr", person)
    monkeypatch.setenv("TB_TEST_CLIENT", "config-client")
    config = _write(tmp_path / "mcp.json", url, {
        "type": "oauth", "client_name": "${TB_TEST_CLIENT}", "scopes": ["mcp", "write"],
        "store": "memory", "timeout": 60})
    with tb.Bench() as bench:
        table = bench.load_config(config, progress=False)
        assert list(table["status"]) == ["connected"], table.to_dict("records")
        assert bench.call("p-write", text="x").text == "wrote x"  # the scope the file asked
    [client] = provider.clients.values()
    assert client.client_name == "config-client"
    assert provider.authorized == 1  # asked for first: no step-up was needed
    assert "scope=mcp+write" in person.opened[0] or "scope=mcp%20write" in person.opened[0]
    assert not (data_dir / "oauth").exists()  # memory only


def test_a_config_sign_in_that_nobody_finishes_is_a_failed_row_within_its_timeout(
        server: tuple[str, Provider], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, _provider = server
    monkeypatch.setattr("sys.stderr", io.StringIO())  # nobody reads the link
    config = _write(tmp_path / "mcp.json", url, {"type": "oauth", "store": "memory",
                                                 "timeout": 2})
    with tb.Bench() as bench:
        with pytest.warns(tb.ConfigWarning, match="failed to start"):  # issue 37, item 4
            table = bench.load_config(config, progress=False)
        assert list(table["status"]) == ["failed"]
        assert "no sign-in within timeout=2 s" in str(table.iloc[0]["error"])

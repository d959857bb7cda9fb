"""A program that is not an MCP server (toolbench._transports.mcp.not_mcp), issue #37 item 6:
the connect says it did not answer as an MCP server, and quotes its first output, escaped and
without the connection's secrets."""

from __future__ import annotations

import shutil
import sys

import pytest

import toolbench as tb


@pytest.mark.slow
def test_cat_is_told_as_not_an_mcp_server_that_echoes() -> None:
    cat = shutil.which("cat")
    assert cat is not None
    with tb.Bench() as bench, pytest.raises(tb.Unreachable) as caught:
        bench.connect("x", [cat], connect_timeout=20)
    text = str(caught.value)
    assert "did not answer as an MCP server" in text
    assert "its first output on stdout: '{\"jsonrpc\":\"2.0\"" in text
    assert "echoes its input back, as cat does" in text


@pytest.mark.slow
def test_a_program_printing_junk_is_quoted_escaped_and_redacted() -> None:
    secret = "Zq7JunkSecretValue"
    junk = ("import os, sys, time; sys.stdout.write('Usage: tool \\x1b[31m' + "
            "os.environ['TOKEN'] + '\\n'); sys.stdout.flush(); time.sleep(10)")
    with tb.Bench() as bench, pytest.raises(tb.Unreachable) as caught:
        bench.connect("x", [sys.executable, "-c", junk], env={"TOKEN": secret},
                      connect_timeout=20)
    text = str(caught.value)
    assert "did not answer as an MCP server" in text
    assert "'Usage: tool \\x1b[31m[redacted]\\n'" in text  # escaped: no raw control byte
    assert secret not in text and "\x1b" not in text
    assert "cat does" not in text


@pytest.mark.slow
def test_a_real_server_that_fails_otherwise_is_not_called_one() -> None:
    exits = [sys.executable, "-c", "import sys; sys.exit(3)"]
    with tb.Bench() as bench, pytest.raises(tb.Unreachable) as caught:
        bench.connect("x", exits, connect_timeout=20)
    assert "did not answer as an MCP server" not in str(caught.value)

"""``map`` and ``compare`` (``toolbench._bench.many.many_calls``): resume of a tool named after a
secret, with a real journal reopened by a new bench, as after a restart.

A server may name a tool after one of its secrets (an env or header value); records, the
journal and the intent log show that name redacted. ``map(resume=True)`` must still
recognise the calls it made: it looks records up by the name they hold, which the same
configuration redacts the same way in any process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

import toolbench as tb

SECRET = "Rk9SecretToolName"
OTHER_SECRET = "Vb2OtherSecretName"


def _server(ran: list[int], *names: str) -> MCPServer:
    """An in-process server whose tools (named ``names``) log the case they ran."""
    server = MCPServer("named")
    for name in names or (f"get-{SECRET}",):
        @server.tool(name=name)
        async def get(i: int, ms: float = 0.0) -> dict[str, Any]:
            ran.append(i)
            await anyio.sleep(ms / 1000)
            return {"i": i}
    return server


def _no_secret(text: str) -> None:
    assert SECRET.lower() not in text.lower()


def test_resume_recognises_a_secret_named_tools_successes_and_doubts(tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"
    ran: list[int] = []
    name = f"named-get-{SECRET}"
    cases = [{"i": 0}, {"i": 1, "ms": 5000.0}, {"i": 2}]
    with tb.Bench(journal=journal) as bench:
        bench.connect("named", _server(ran), secrets=[SECRET])
        first = bench.map(name, cases, timeout=0.5, progress=False)
        assert list(first["disposition"]) == ["landed", "in_doubt", "landed"]
        _no_secret(str(first.to_dict("records")))
    assert sorted(ran) == [0, 1, 2]
    ran.clear()
    with tb.Bench(journal=journal) as bench:  # a new bench on the same file: a restart
        bench.connect("named", _server(ran), secrets=[SECRET])
        again = bench.map(name, [*cases, {"i": 3}], timeout=0.5, progress=False, resume=True)
        assert ran == [3]  # the done and the in-doubt cases did not run again
        assert list(again["call_id"][:3]) == list(first["call_id"])
        retried = bench.map(name, cases, timeout=10, progress=False, resume=True,
                            retry_in_doubt=True)
        assert ran == [3, 1] and retried["ok"].all()
        _no_secret(str(bench.records.to_dict("records")))
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert SECRET.lower().encode() not in on_disk.lower()


def test_resume_refuses_two_tools_whose_names_differ_only_in_a_secret(tmp_path: Path) -> None:
    """Both are recorded as ``x-[redacted]``: resume cannot tell whose record is whose, so it
    says so instead of skipping a case that never ran."""
    ran: list[int] = []
    server = _server(ran, f"x-{SECRET}", f"x-{OTHER_SECRET}")
    with tb.Bench(journal=tmp_path / "calls.sqlite") as bench:
        bench.connect("named", server, secrets=[SECRET, OTHER_SECRET])
        assert bench.map(f"named-x-{SECRET}", [{"i": 0}], progress=False)["ok"].all()
        with pytest.raises(ValueError, match="resume cannot tell") as info:
            bench.map(f"named-x-{OTHER_SECRET}", [{"i": 0}], progress=False, resume=True)
        _no_secret(str(info.value))
        assert OTHER_SECRET.lower() not in str(info.value).lower()
        assert ran == [0]  # nothing ran for the refused map


def test_progress_bars_do_not_show_the_secret(capfd: pytest.CaptureFixture[str]) -> None:
    """A map's or compare's label (its progress bar, and a JournalWarning's first words)
    names the tool as records do."""
    ran: list[int] = []
    with tb.Bench() as bench:
        bench.connect("named", _server(ran), secrets=[SECRET])
        bench.map(f"named-get-{SECRET}", [{"i": 0}, {"i": 1}], progress=True)
        bench.compare(f"get-{SECRET}", [{"i": 2}, {"i": 3}], progress=True)
    err = capfd.readouterr().err
    assert "map named-get-[redacted]" in err and "compare get-[redacted]" in err, err
    _no_secret(err)
    assert sorted(ran) == [0, 1, 2, 3]

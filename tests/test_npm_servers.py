"""Two more third-party servers from npm, through a Bench: server-filesystem and server-memory.

server-filesystem replaces its allowed folders with the client's roots once it learns them, so
it is the real proof of per-server roots (issue 25: ``Bench(roots=[B])`` once let a filesystem
server started on folder A read B's files). server-memory keeps a knowledge graph in a file:
a write, a read, and the graph still there after the server is restarted.

`.ci/run` installs both, pinned to ``VERSION`` (change both together); a missing or different
version is an error that names the command to run, never a skip.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from servers import everything

import toolbench as tb

VERSION = "2026.8.31"
_why_not = everything.node_missing()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(_why_not is not None, reason=f"the npm servers need Node.js: {_why_not}"),
]


def _entry(package: str) -> str:
    folder = everything.cache_dir() / "node_modules" / "@modelcontextprotocol" / package
    how = (f"npm install --prefix {everything.cache_dir()} "
           f"@modelcontextprotocol/{package}@{VERSION}")
    manifest = folder / "package.json"
    if not manifest.is_file():
        raise RuntimeError(f"@modelcontextprotocol/{package} is not installed; run: {how}")
    found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    if found != VERSION:
        raise RuntimeError(f"@modelcontextprotocol/{package} is {found!r}, the tests pin "
                           f"{VERSION!r}; run: {how}")
    return str(folder / "dist" / "index.js")


def _until(check: Callable[[], bool], within_s: float = 30.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_each_filesystem_server_reads_only_its_own_roots(tmp_path: Path) -> None:
    started_on, mine, theirs = tmp_path / "started_on", tmp_path / "mine", tmp_path / "theirs"
    for folder in (started_on, mine, theirs):
        folder.mkdir()
        (folder / "note.txt").write_text(f"{folder.name}'s note", encoding="utf-8")
    node = everything.stdio_command()[0]
    entry = _entry("server-filesystem")
    with tb.Bench(roots=[theirs]) as bench:  # the bench's default is not this server's root
        bench.connect("fa", [node, entry, str(started_on)], roots=[mine])
        bench.connect("fb", [node, entry, str(started_on)])  # takes the bench's default

        def allowed(server: str) -> str:
            return bench.call(f"{server}-list_allowed_directories").text

        # The server asks for roots after the handshake, so it may take a moment to switch.
        assert _until(lambda: str(mine.resolve()) in allowed("fa")), allowed("fa")
        assert _until(lambda: str(theirs.resolve()) in allowed("fb")), allowed("fb")
        assert str(theirs.resolve()) not in allowed("fa")
        assert str(started_on.resolve()) not in allowed("fa")

        read = bench.call("fa-read_text_file", path=str(mine / "note.txt"))
        assert read.text == "mine's note"
        with pytest.raises(tb.ToolFailed, match=r"(?i)denied|outside|not allowed") as refused:
            bench.call("fa-read_text_file", path=str(theirs / "note.txt"))
        assert "theirs's note" not in str(refused.value)
        assert bench.call("fb-read_text_file", path=str(theirs / "note.txt")).text == (
            "theirs's note")

        # A new root for one server reaches that server only.
        assert bench.set_roots("fa", [theirs]) is True
        assert _until(lambda: str(theirs.resolve()) in allowed("fa")), allowed("fa")
        assert str(mine.resolve()) not in allowed("fa")
        assert str(theirs.resolve()) in allowed("fb") and str(mine.resolve()) not in allowed("fb")


def test_memory_server_keeps_its_graph_across_a_restart(tmp_path: Path) -> None:
    graph = tmp_path / "memory.jsonl"
    node = everything.stdio_command()[0]
    entry = _entry("server-memory")
    config = {"mcpServers": {"memory": {"command": node, "args": [entry],
                                        "env": {"MEMORY_FILE_PATH": str(graph)}}}}
    entity = {"name": "Lima", "entityType": "city", "observations": ["capital of Peru"]}
    with tb.Bench() as bench:
        bench.load_config(config)
        created = bench.call("memory-create_entities", entities=[entity])
        assert "Lima" in created.text
        bench.disconnect("memory")
        bench.load_config(config)  # a new process, the same file
        read = bench.call("memory-read_graph")
        names = [e["name"] for e in json.loads(read.text)["entities"]]
        assert names == ["Lima"]
        found = bench.call("memory-search_nodes", query="Peru")
        assert "Lima" in found.text
    assert graph.is_file() and "capital of Peru" in graph.read_text(encoding="utf-8")

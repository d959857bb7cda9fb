"""The tool count taken before a tools/list reply is parsed (toolbench._transports.wire.precount).

The end-to-end refusals (stdio and HTTP) are in test_limits.py.
"""

from __future__ import annotations

import json
import random
from typing import Any

import anyio
import pytest

from toolbench._transports.wire import precount
from toolbench._transports.wire.precount import PageCount, listed_tools_bound


def _page(tools: list[Any], **extra: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"tools": tools, **extra}}).encode()


@pytest.mark.parametrize("chunk", [3, 7, 64, 1 << 20])
def test_the_tool_count_before_parsing_matches_the_parse(
        chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precount, "PRECOUNT_CHUNK", chunk)
    rng = random.Random(chunk)
    nasty = ['"', "\\", "\\\\", "\\\"", "{", "}", "[", "]", "[{", "a"]
    for _ in range(200):
        tools = [{"name": "t" + "".join(rng.choices(nasty, k=rng.randint(0, 4))),
                  "inputSchema": {"type": "object", "items": [{"x": ["{"]}]}}
                 for _ in range(rng.randint(0, 8))]
        extra = {"_meta": {"list": [{"not": "a tool"}]}, "nextCursor": "[{"}
        raw = _page(tools, **extra)
        assert listed_tools_bound(raw) == len(json.loads(raw)["result"]["tools"]), raw


def test_the_count_never_undercounts_a_page_in_any_layout() -> None:
    spaced = b'{ "id" : 7 , "result" : { "tools" : [ { "name" : "a" } , {"name":"b"} ] } ,' \
             b' "jsonrpc" : "2.0" }'
    assert listed_tools_bound(spaced) == 2
    escaped = b'{"jsonrpc":"2.0","id":7,"result":{"\\u0074ools":[{"name":"a\\"}{"}]}}'
    assert listed_tools_bound(escaped) == 1
    assert listed_tools_bound(b"not json at all {[") == 0




# -- PageCount: a reply counted as it streams in ----------------------------------------------
class _Refused(Exception):
    pass


def _refuse(count: int, arrived: int) -> BaseException:
    return _Refused(count, arrived)


def _stream(raw: bytes, limit: int, events: bool, cuts: list[int]) -> tuple[int, int] | None:
    """Feed ``raw`` cut at ``cuts``; the refusal's (count, bytes) or None if it passed."""
    async def run() -> tuple[int, int] | None:
        count = PageCount(limit, events, _refuse)
        try:
            at = 0
            for cut in [*cuts, len(raw)]:
                await count.feed(raw[at:cut])
                at = cut
            await count.end()
        except _Refused as exc:
            return exc.args[0], exc.args[1]
        return None
    return anyio.run(run)


def _event_stream(page: bytes, eol: bytes) -> bytes:
    """A notification event, then the page as an event whose ``id:`` and comment lines are
    full of quotes and brackets, its data split over lines between tools."""
    note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":[{"a":1}]}}'
    body = page.replace(b', {"name"', b"," + eol + b'data: {"name"')
    return (b"event: message" + eol + b"data: " + note + eol + eol
            + b'id: "[[[{' + eol + b': {"\\' + eol + b"data:" + body + eol + eol)


@pytest.mark.parametrize("events", [False, True], ids=["json", "event-stream"])
def test_a_streamed_page_is_refused_exactly_past_the_limit(
        events: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precount, "PRECOUNT_MIN_BYTES", 0)  # count even a small page
    rng = random.Random(5)
    for eol in (b"\n", b"\r\n", b"\r"):
        tools = [{"name": f"t{i}", "description": 'q"{[\\', "inputSchema": {}} for i in range(40)]
        raw = _page(tools)
        if events:
            raw = _event_stream(raw, eol)
        for _ in range(30):
            cuts = sorted(rng.sample(range(1, len(raw)), rng.randint(0, 20)))
            assert _stream(raw, 40, events, cuts) is None
            refused = _stream(raw, 39, events, cuts)
            assert refused is not None and refused[0] == 40, (eol, cuts)


def test_a_cr_lf_split_across_chunks_is_one_line_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precount, "PRECOUNT_MIN_BYTES", 0)
    raw = _event_stream(_page([{"name": "a"}, {"name": "b"}]), b"\r\n")
    for cut in range(1, len(raw)):
        refused = _stream(raw, 1, True, [cut])
        assert refused is not None and refused[0] == 2, cut


def test_only_data_lines_are_counted_and_each_event_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precount, "PRECOUNT_MIN_BYTES", 0)
    page = _page([{"name": "a"}, {"name": "b"}])
    # Tools written on an id: line or a comment are not data; two events do not add up.
    fake = b'id: ' + page + b"\n: " + page + b"\n\n"
    assert _stream(fake + b"data: " + page + b"\n\n" + b"data: " + page + b"\n\n",
                   2, True, []) is None
    # "data" needs its colon at once: "datum:" is another field, a lone "data" is empty.
    assert _stream(b"datum: " + page + b"\ndata\n\n", 0, True, []) is None
    assert _stream(b"da", 1, True, []) is None


def test_a_small_reply_is_not_counted() -> None:
    page = _page([{"name": f"t{i}"} for i in range(100)])
    assert len(page) < precount.PRECOUNT_MIN_BYTES
    assert _stream(page, 1, False, [len(page) // 2]) is None


def test_a_big_reply_is_refused_in_its_first_megabytes() -> None:
    tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(200_000)]
    raw = _page(tools)
    cuts = list(range(65_536, len(raw), 65_536))
    refused = _stream(raw, 10_000, False, cuts)
    assert refused is not None
    count, arrived = refused
    assert 10_000 < count < 200_000 and arrived <= 2 * precount.PRECOUNT_CHUNK + 65_536

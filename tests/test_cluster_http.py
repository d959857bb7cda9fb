"""``map(..., cluster=client)`` against HTTP servers: streamable HTTP and SSE at their URL with
the same headers, and a signed-in server with ``share_credentials=True`` (the bundled OAuth
demo, as a real process). A real LocalCluster of 2 worker processes per test."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from oauth_glue import follow, protected_server
from servers.cache_hints_http import serve_in_thread
from serving import served_url

import toolbench as tb

pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("dask_resource_tracker")]

HERE = Path(__file__).parent
KEY = "x-key-for-the-cluster-http-test"


def _browser(url: str) -> str:
    """The person's part, for the demo's auto-approving authorization server."""
    redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    return follow(url, until=redirect)


def _same(local: Any, remote: Any) -> None:
    for column in ("ok", "disposition", "text", "arguments"):
        assert list(local[column]) == list(remote[column]), column


def test_a_streamable_http_server_is_reached_with_the_same_headers(dask_client: Any) -> None:
    cases = [{"text": f"case {i}"} for i in range(24)]
    with serve_in_thread() as server, tb.Bench() as bench:
        bench.connect("h", server.url, headers={"X-Key": KEY})
        remote = bench.map("h-echo", cases, cluster=dask_client, progress=False)
        assert remote["ok"].all(), remote["error"].tolist()
        assert server.count("tools/call") == 24  # each case once, none twice
        assert server.keys == [KEY] * 24
        _same(bench.map("h-echo", cases, progress=False), remote)
        assert KEY not in remote.to_string() and KEY not in repr(remote.to_dict())


def test_an_sse_server_is_reached_at_its_url(dask_client: Any) -> None:
    with served_url(HERE / "servers" / "big_sse_server.py") as url:
        assert url.endswith("/sse")
        cases = [{"text": str(i)} for i in range(12)]
        with tb.Bench() as bench:
            bench.connect("s", url)
            assert bench.servers.iloc[0]["transport"] == "sse"
            remote = bench.map("s-echo", cases, cluster=dask_client, progress=False)
            assert remote["ok"].all(), remote["error"].tolist()
            _same(bench.map("s-echo", cases, progress=False), remote)


def test_a_signed_in_server_travels_only_with_share_credentials(dask_client: Any) -> None:
    with protected_server() as url, tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=_browser, store="memory"))
        with pytest.raises(ValueError, match=r"signs in .*share_credentials=True"):
            bench.map("p-echo", [{"text": "x"}], cluster=dask_client, progress=False)
        with pytest.raises(ValueError, match="only with cluster="):
            bench.map("p-echo", [{"text": "x"}], share_credentials=True, progress=False)
        assert bench.records.empty  # refused before anything ran or shipped
        cases = [{"text": f"t{i}"} for i in range(10)]
        remote = bench.map("p-echo", cases, cluster=dask_client, share_credentials=True,
                           progress=False)
        assert remote["ok"].all(), remote["error"].tolist()
        assert list(remote["text"]) == [c["text"] for c in cases]
        who = bench.map("p-whoami", [{}], cluster=dask_client, share_credentials=True,
                        progress=False)
        assert who["ok"].all() and who.iloc[0]["structured"]["user"]
        _no_token_anywhere(bench, dask_client)


def _tokens(bench: tb.Bench) -> dict[str, str]:
    """The sign-in's tokens as the driver holds them (for the test to look for them)."""
    storage = bench.connections.mcp("p")._auth.storage
    record = storage.current()
    assert record is not None and record.tokens
    return {k: record.tokens[k] for k in ("access_token", "refresh_token")}


def _no_token_anywhere(bench: tb.Bench, client: Any) -> None:
    tokens = _tokens(bench)
    texts = [bench.records.to_string(), repr(bench.records.to_dict()), repr(bench),
             bench.servers.to_string(), repr(client.get_worker_logs()),
             repr(client.run(lambda: __import__("logging").getLogger().handlers))]
    for text in texts:
        for value in tokens.values():
            assert value not in text


def test_what_travels_is_the_access_token_only() -> None:
    from toolbench._bench.many.cluster import _spec

    with protected_server() as url, tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=_browser, store="memory"))
        tokens = _tokens(bench)
        spec = _spec(bench.connections, type(bench), "p", share_credentials=True)
        assert spec.shared and "auth" not in spec.options
        assert spec.options["headers"]["Authorization"] == f"Bearer {tokens['access_token']}"
        shipped = pickle.dumps(spec)
        assert tokens["refresh_token"].encode() not in shipped
        assert tokens["access_token"] not in repr(spec)


def test_a_worker_s_401_is_unreachable_and_sent_again_after_the_driver_renews(
        dask_client: Any) -> None:
    with protected_server() as url, tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=_browser, store="memory"))
        first = bench.map("p-echo", [{"text": "a"}, {"text": "b"}], cluster=dask_client,
                          share_credentials=True, progress=False)
        assert first["ok"].all()
        old = _tokens(bench)["access_token"]
        info = bench.connections.mcp("p")._auth.storage.current().client_info
        base = url.removesuffix("/mcp")
        revoked = httpx.post(f"{base}/revoke", timeout=10, data={
            "token": old, "client_id": info["client_id"],
            "client_secret": info.get("client_secret") or ""})
        assert revoked.status_code == 200, revoked.text
        cases = [{"text": f"again {i}"} for i in range(6)]
        again = bench.map("p-echo", cases, cluster=dask_client, share_credentials=True,
                          progress=False)
        assert again["ok"].all(), again["error"].tolist()
        assert list(again["text"]) == [c["text"] for c in cases]
        assert _tokens(bench)["access_token"] != old  # the driver signed in anew
        turned = bench.records[bench.records["ok"] == False]  # noqa: E712
        assert len(turned) == 6  # each case's first attempt: the 401, never run
        assert set(turned["error_type"]) == {"Unreachable"}
        assert set(turned["disposition"]) == {"did_not_happen"}
        assert all("HTTP 401" in e for e in turned["error"])
        _no_token_anywhere(bench, dask_client)

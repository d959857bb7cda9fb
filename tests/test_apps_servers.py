"""MCP Apps against the real ext-apps example servers over stdio (npm, pinned), driven
without a browser through ``view.handle`` (DESIGN.md, "MCP Apps")."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from tests.servers.everything import cache_dir
from toolbench._bench.apps.meta import MIME_TYPE

APPS_VERSION = "2.0.3"
"""The version `.ci/run` installs (APPS_VERSION there): change them together."""


def server_command(package: str) -> list[str]:
    """``node …/dist/index.js --stdio`` for a pinned ext-apps example server, else skip."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH; the ext-apps example servers need Node.js")
    root = cache_dir() / "node_modules" / "@modelcontextprotocol" / package
    how = (f"install it with: npm install --prefix {cache_dir()} --no-audit --no-fund "
           f"@modelcontextprotocol/{package}@{APPS_VERSION}")
    if not (root / "dist" / "index.js").is_file():
        pytest.skip(f"@modelcontextprotocol/{package} is not installed in {cache_dir()}; {how}")
    found = json.loads((root / "package.json").read_text(encoding="utf-8")).get("version")
    if found != APPS_VERSION:
        pytest.skip(f"{package} is {found!r}, the tests pin {APPS_VERSION!r}; {how}")
    return [node, str(Path(root, "dist", "index.js")), "--stdio"]


def rpc(id_: int | None, method: str, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        message["id"] = id_
    return message


@pytest.mark.slow
def test_basic_vanillajs_view_and_its_four_buttons() -> None:
    with tb.Bench(timeout=30) as bench:
        bench.connect("basic", server_command("server-basic-vanillajs"))
        cat = bench.catalog().set_index("tool")
        assert cat.loc["get-time", "ui"] == "ui://get-time/mcp-app.html"
        apps = bench.apps()
        row = apps.iloc[0]
        assert row["mime_type"] == MIME_TYPE and row["error"] is None
        assert row["bytes"] > 10_000
        result = bench.call("basic-get-time")
        view = result.app
        assert view is not None and view.sandbox == "allow-scripts"
        init = view.handle(rpc(1, "ui/initialize", protocolVersion="2026-01-26",
                               appInfo={"name": "t", "version": "1"}, appCapabilities={}))
        assert init["result"]["hostContext"]["toolInfo"]["tool"]["name"] == "get-time"
        view.handle(rpc(None, "ui/notifications/initialized"))
        outbox = view.bridge.outbox
        assert [m["method"] for m in outbox] == ["ui/notifications/tool-input",
                                                 "ui/notifications/tool-result"]
        # "Get Server Time": tools/call through the bench, recorded with its provenance
        reply = view.handle(rpc(2, "tools/call", name="get-time", arguments={}))
        assert "time" in reply["result"]["structuredContent"]
        last = bench.records.iloc[-1]
        assert last["ok"] and last["provenance"]["app"] == {
            "uri": "ui://get-time/mcp-app.html", "opened_by": result.call_id}
        # "Send Message", "Send Log", "Open Link"
        view.handle(rpc(3, "ui/message", role="user",
                        content=[{"type": "text", "text": "hello"}]))
        assert view.messages[-1]["content"][0]["text"] == "hello"
        view.handle(rpc(None, "notifications/message", level="info", data="a log"))
        assert (bench.logs["kind"] == "app").any()
        view.handle(rpc(4, "ui/open-link", url="https://modelcontextprotocol.io/"))
        assert view.links == ["https://modelcontextprotocol.io/"]


@pytest.mark.slow
def test_system_monitor_app_only_tool_is_callable_by_its_view_only() -> None:
    with tb.Bench(timeout=30) as bench:
        bench.connect("mon", server_command("server-system-monitor"))
        cat = bench.catalog().set_index("tool")
        app_only = [t for t, v in cat["visibility"].items() if tuple(v) == ("app",)]
        assert app_only, "system-monitor declares an app-only tool its view polls"
        with_view = [t for t, u in cat["ui"].items() if isinstance(u, str)]
        assert with_view
        result = bench.call(f"mon-{with_view[0]}")
        view = result.app
        assert view is not None
        view.handle(rpc(1, "ui/initialize", protocolVersion="2026-01-26"))
        reply = view.handle(rpc(2, "tools/call", name=app_only[0], arguments={}))
        assert "result" in reply, reply
        assert bench.records.iloc[-1]["provenance"]["app"]["opened_by"] == result.call_id
        refused = view.handle(rpc(3, "tools/call", name="not-a-tool", arguments={}))
        assert refused["error"]["code"] == -32602
        assert bench.records.iloc[-1]["error_type"] == "Refused"


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF with ``text`` on it, its xref offsets computed (pdf.js reads it)."""
    stream = f"BT /F1 12 Tf 10 50 Td ({text}) Tj ET".encode("ascii")
    bodies = [b"<< /Type /Catalog /Pages 2 0 R >>",
              b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
              b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R >>",
              b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(bodies, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(bodies) + 1, xref)
    return bytes(out)


def pdf_server(tmp_path: Path) -> tuple[list[str], Path]:
    """server-pdf over stdio, offline: it is given one local PDF on its command line (its
    only allowed file), so no tool the tests call reaches the network (its default is an
    arXiv URL)."""
    document = tmp_path / "bench.pdf"
    document.write_bytes(tiny_pdf("toolbench"))
    return [*server_command("server-pdf"), str(document)], document


def directives(csp: str) -> dict[str, set[str]]:
    """A CSP string as {directive: its sources}, order aside."""
    found: dict[str, set[str]] = {}
    for part in csp.split(";"):
        name, *sources = part.split()
        assert name not in found, f"{name} twice in {csp!r}"
        found[name] = set(sources)
    return found


PDF_URI = "ui://pdf-viewer/mcp-app.html"
PDF_APP_ONLY = {"read_pdf_bytes", "poll_pdf_commands", "submit_page_data",
                "submit_save_data", "submit_viewer_state", "save_pdf"}
"""server-pdf 2.0.3's tools with ``_meta.ui.visibility == ["app"]``: its viewer loads the
document through ``read_pdf_bytes`` and polls ``poll_pdf_commands`` for what ``interact``
queued; the model never calls them."""


@pytest.mark.slow
def test_pdf_catalog_view_row_csp_with_an_outside_domain_and_permissions(
        tmp_path: Path) -> None:
    command, document = pdf_server(tmp_path)
    with tb.Bench(timeout=30) as bench:
        bench.connect("pdf", command)
        cat = bench.catalog().set_index("tool")
        assert cat.loc["display_pdf", "ui"] == PDF_URI
        assert tuple(cat.loc["display_pdf", "visibility"]) == ("model", "app")
        app_only = {t for t, v in cat["visibility"].items() if tuple(v) == ("app",)}
        assert app_only == PDF_APP_ONLY
        assert tuple(cat.loc["interact", "visibility"]) == ("model", "app")
        assert [t for t, u in cat["ui"].items() if isinstance(u, str)] == ["display_pdf"]

        apps = bench.apps()
        assert len(apps) == 1
        row = apps.iloc[0]
        assert (row["tool"], row["uri"], row["mime_type"], row["error"]) == (
            "display_pdf", PDF_URI, MIME_TYPE, None)
        assert row["bytes"] > 1_000_000  # pdf.js is inlined: the whole viewer is one document
        # its resource declares csp {connectDomains, resourceDomains: [https://unpkg.com]}
        # (pdf.js's standard fonts) and permissions {clipboardWrite}: DESIGN's mapping
        outside = "https://unpkg.com"
        assert directives(row["csp"]) == {
            "default-src": {"'none'"},
            "connect-src": {outside},
            "script-src": {"'unsafe-inline'", outside},
            "style-src": {"'unsafe-inline'", outside},
            "img-src": {"data:", outside},
            "font-src": {"data:", outside},
            "media-src": {"data:", outside},
            "frame-src": {"'none'"},
            "base-uri": {"'none'"},
            "object-src": {"'none'"},
        }
        assert list(row["permissions"]) == ["clipboardWrite"]
        assert row["domain"] is None and row["prefers_border"] is False

        result = bench.call("pdf-display_pdf", url=str(document))
        assert result.structured["totalBytes"] == document.stat().st_size
        view = result.app
        assert view is not None and view.uri == PDF_URI
        assert view.sandbox == "allow-scripts" and view.allow == "clipboard-write"
        assert view.csp == row["csp"] and view.warnings == []
        meta = view.html.index('http-equiv="Content-Security-Policy"')
        assert meta < view.html.lower().index("<script")
        assert "https://unpkg.com" in view.html[:meta + 1000]


@pytest.mark.slow
def test_pdf_view_reads_bytes_and_polls_what_the_model_queued(tmp_path: Path) -> None:
    command, document = pdf_server(tmp_path)
    with tb.Bench(timeout=30) as bench:
        bench.connect("pdf", command)
        bench.connect("basic", server_command("server-basic-vanillajs"))
        result = bench.call("pdf-display_pdf", url=str(document))
        uuid = result.structured["viewUUID"]
        view = result.app
        assert view is not None
        init = view.handle(rpc(1, "ui/initialize", protocolVersion="2026-01-26",
                               appInfo={"name": "t", "version": "1"}, appCapabilities={}))
        assert init["result"]["hostContext"]["toolInfo"]["tool"]["name"] == "display_pdf"
        assert not view.bridge.outbox  # nothing before initialized
        view.handle(rpc(None, "ui/notifications/initialized"))
        sent = list(view.bridge.outbox)
        assert [m["method"] for m in sent] == ["ui/notifications/tool-input",
                                               "ui/notifications/tool-result"]
        assert sent[0]["params"]["arguments"] == {"url": str(document)}
        assert sent[1]["params"]["structuredContent"]["viewUUID"] == uuid
        app = {"uri": PDF_URI, "opened_by": result.call_id}

        # the viewer loads the document through an app-only tool
        reply = view.handle(rpc(2, "tools/call", name="read_pdf_bytes",
                                arguments={"url": str(document), "offset": 0,
                                           "byteCount": 64}))
        got = reply["result"]["structuredContent"]
        assert base64.b64decode(got["bytes"]) == document.read_bytes()[:64]
        assert got["totalBytes"] == document.stat().st_size and got["hasMore"] is True
        last = bench.records.iloc[-1]
        assert (last["tool"], last["ok"], last["provenance"]["app"]) == (
            "read_pdf_bytes", True, app)

        # the model queues a command with `interact`; the viewer polls for it (app-only)
        queued = bench.call("pdf-interact", viewUUID=uuid, action="navigate", page=1)
        assert not queued.is_error and bench.records.iloc[-1]["provenance"] is None
        reply = view.handle(rpc(3, "tools/call", name="poll_pdf_commands",
                                arguments={"viewUUID": uuid}))
        assert reply["result"]["structuredContent"]["commands"] == [
            {"type": "navigate", "page": 1}]
        assert bench.records.iloc[-1]["provenance"]["app"] == app

        # another server's tool, though on this bench, is refused; that server is not asked
        refused = view.handle(rpc(4, "tools/call", name="get-time", arguments={}))
        assert refused["error"]["code"] == -32602
        assert "get-time" in refused["error"]["message"]
        last = bench.records.iloc[-1]
        assert (last["server"], last["error_type"], last["provenance"]["app"]) == (
            "pdf", "Refused", app)
        assert not (bench.records["server"] == "basic").any()
        log = view.log
        calls = log[log["method"] == "tools/call"]
        assert list(zip(calls["direction"], calls["ok"], strict=True))[1::2] == [
            ("out", True), ("out", True), ("out", False)]  # each call's reply, logged


@pytest.mark.slow
def test_pdf_view_csp_drops_its_outside_domain_under_egress(tmp_path: Path) -> None:
    command, document = pdf_server(tmp_path)
    with tb.Bench(timeout=30, egress=["example.org"]) as bench:
        bench.connect("pdf", command)  # a stdio child is LOCAL: egress does not judge it
        row = bench.apps().iloc[0]
        assert row["error"] is None
        found = directives(row["csp"])
        assert found["connect-src"] == {"'none'"}
        assert found["script-src"] == {"'unsafe-inline'"}
        assert found["img-src"] == {"data:"}
        assert "unpkg" not in row["csp"]
        assert list(row["permissions"]) == ["clipboardWrite"]  # egress limits domains only
        view = bench.call("pdf-display_pdf", url=str(document)).app
        assert view is not None and view.csp == row["csp"]
        notes = [w for w in view.warnings if "https://unpkg.com" in w]
        assert len(notes) == 2  # connectDomains and resourceDomains, each noted
        assert all("egress" in w for w in notes)

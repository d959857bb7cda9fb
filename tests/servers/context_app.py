"""An MCP App server over stdio whose view reports what its host tells it, for browser tests:
``python tests/servers/context_app.py``.

The view (``ui://context/view.html``) sends ``ui/initialize`` and then waits: ``go()`` (called
by a test inside the frame) sends ``ui/notifications/initialized`` and a size, so a test can
see the host's placeholder before the view reports its size. Every message the host posts is
appended to ``#log`` as one JSON line, and ``window.received`` keeps them.
``ask(mode)`` sends ``ui/request-display-mode``.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

MIME = "text/html;profile=mcp-app"
URI = "ui://context/view.html"

VIEW = """<!doctype html><html><head><title>context</title></head><body>
<p id="state">waiting</p><pre id="log"></pre>
<script>
let id = 0;
window.received = [];
const post = (m) => window.parent.postMessage(m, "*");
const log = document.getElementById("log");
window.addEventListener("message", (e) => {
  window.received.push(e.data);
  log.textContent += JSON.stringify(e.data).slice(0, 400) + "\\n";
  if (e.data && e.data.id === "toolbench-teardown") {
    post({jsonrpc: "2.0", id: e.data.id, result: {}});
  }
});
window.go = () => {
  post({jsonrpc: "2.0", method: "ui/notifications/initialized", params: {}});
  post({jsonrpc: "2.0", method: "ui/notifications/size-changed", params: {height: 300}});
  document.getElementById("state").textContent = "sized";
};
window.ask = (mode) => post({jsonrpc: "2.0", id: ++id, method: "ui/request-display-mode",
                              params: {mode}});
post({jsonrpc: "2.0", id: ++id, method: "ui/initialize",
      params: {protocolVersion: "2026-01-26", appInfo: {name: "context", version: "0"},
               appCapabilities: {availableDisplayModes: ["inline", "fullscreen"]}}});
</script></body></html>"""


def create() -> MCPServer:
    server = MCPServer("context_app")
    ui: dict[str, Any] = {"ui": {"resourceUri": URI}, "ui/resourceUri": URI}

    @server.tool(meta=ui)
    def open_view() -> str:
        """Opens the view that reports its host."""
        return "opened"

    @server.resource(URI, mime_type=MIME)
    def view() -> str:
        return VIEW

    return server


if __name__ == "__main__":
    create().run("stdio")

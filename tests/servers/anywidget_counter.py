"""The real PyPI ``anywidget-mcp`` serving one AnyWidget over stdio, for tests:
``python tests/servers/anywidget_counter.py``.

Its tool ``counter`` opens the package's own view (``ui://anywidget/app.html``), whose data
travels only in results' ``_meta`` (``{"anywidget": ...}``, with empty ``content``): a host
that drops ``_meta`` cannot open it (its view then says "Widget bootstrap returned no runtime
data").
"""

from __future__ import annotations

import anywidget
import traitlets
from anywidget_mcp.server import AnyWidgetMCP


class Counter(anywidget.AnyWidget):  # type: ignore[misc]
    """A button that counts its clicks."""

    _esm = """
    export default { render({ model, el }) {
      const b = document.createElement("button");
      b.id = "counter-btn";
      const show = () => { b.textContent = `count is ${model.get("value")}`; };
      b.onclick = () => { model.set("value", model.get("value") + 1); model.save_changes(); };
      model.on("change:value", show);
      show();
      el.append(b);
    } };
    """
    value = traitlets.Int(0).tag(sync=True)


def create() -> AnyWidgetMCP:
    server = AnyWidgetMCP("counter")
    server.widget(Counter, name="counter", description="A counter widget.")
    return server


if __name__ == "__main__":
    create().run(transport="stdio")

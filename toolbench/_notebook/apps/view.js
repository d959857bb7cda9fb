// toolbench's MCP App frame (DESIGN.md, "MCP Apps"): one sandboxed iframe per view, and a
// relay. A message is taken only from this view's own frame (event.source), sent to the
// kernel as {kind: "rpc", message}; {kind: "rpc", message} from the kernel is posted into
// the frame; {kind: "teardown"} sends ui/resource-teardown and removes the frame after 2 s.
const TEARDOWN_ID = "toolbench-teardown";
const TEARDOWN_WAIT_MS = 2000;

function render({ model, el }) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", model.get("sandbox"));
  const allow = model.get("allow");
  if (allow) frame.setAttribute("allow", allow);
  frame.setAttribute("title", "MCP App view");
  frame.style.width = "100%";
  frame.style.display = "block";
  frame.style.border = model.get("border") ? "1px solid var(--jp-border-color1, #ccc)" : "0";
  frame.style.height = `${model.get("height")}px`;
  frame.srcdoc = model.get("html");
  const links = document.createElement("div");
  el.append(frame, links);
  let closing = false;

  const onMessage = (event) => {
    if (event.source !== frame.contentWindow || !frame.contentWindow) return;
    const data = event.data;
    if (closing && data && data.id === TEARDOWN_ID) frame.remove();
    model.send({ kind: "rpc", message: data });
  };
  window.addEventListener("message", onMessage);

  const showLinks = () => {
    links.replaceChildren(...model.get("links").map((url) => {
      const row = document.createElement("div");
      const a = document.createElement("a");
      a.href = url;  // shown, never opened for the user (http(s) only, checked in Python)
      a.rel = "noopener noreferrer";
      a.target = "_blank";
      a.textContent = url;
      row.append("link from the view: ", a);
      return row;
    }));
  };
  showLinks();
  model.on("change:links", showLinks);
  model.on("change:height", () => { frame.style.height = `${model.get("height")}px`; });

  const teardown = () => {
    if (closing) return;
    closing = true;
    if (frame.contentWindow) {
      frame.contentWindow.postMessage(
        { jsonrpc: "2.0", id: TEARDOWN_ID, method: "ui/resource-teardown", params: {} }, "*");
    }
    setTimeout(() => { frame.remove(); window.removeEventListener("message", onMessage); },
               TEARDOWN_WAIT_MS);
  };
  model.on("msg:custom", (msg) => {
    if (msg && msg.kind === "rpc" && frame.contentWindow && !closing) {
      frame.contentWindow.postMessage(msg.message, "*");
    } else if (msg && msg.kind === "teardown") {
      teardown();
    }
  });
  const light = document.body.dataset.jpThemeLight;
  model.send({ kind: "context", theme: light === "false" ? "dark" : "light",
               width: el.clientWidth || null });

  return () => {  // the output is closed or the cell re-run: keep the frame 2 s, hidden
    if (!closing && frame.isConnected) {
      const keep = document.createElement("div");
      keep.style.display = "none";
      document.body.append(keep);
      keep.append(frame);
      teardown();
      setTimeout(() => keep.remove(), TEARDOWN_WAIT_MS);
    }
  };
}

export default { render };

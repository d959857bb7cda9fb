// toolbench's MCP App frame (DESIGN.md, "MCP Apps"): one sandboxed iframe per view, and a
// relay. A message is taken only from this view's own frame (event.source), sent to the
// kernel as {kind: "rpc", message}; {kind: "rpc", message} from the kernel is posted into
// the frame; {kind: "teardown"} from the kernel, or the output being cleared or closed, sends
// ui/resource-teardown to the live document and removes the frame on its answer, or after 2 s.
// The kernel is told {kind: "teardown", state: "sent" | "unanswered" | "gone"}. A view that
// leaves its document ends ({kind: "navigated"}), and a message over the kernel's bound is
// answered here, never sent ({kind: "refused"}): see "The frame's own guards" below.
//
// Why "parking": JupyterLab removes an output's DOM *before* the widget's cleanup runs, and
// removing an iframe discards its document, so a teardown sent from the cleanup would reach
// no one (and an iframe moved with appendChild reloads: a fresh document). So the frame is
// kept alive across the removal: on Lumino's "before-detach" (the view's
// processLuminoMessage, while the frame is still in the page) it is moved with
// Element.moveBefore, the state-preserving move that keeps an iframe's document, into a
// hidden holder. If the view is then removed, the live document gets the teardown; if it is
// attached again instead (a cell moved), the frame goes back, still the same document.
const TEARDOWN_ID = "toolbench-teardown";
const TEARDOWN_WAIT_MS = 2000;
const ANSWERED_GRACE_MS = 100;
const PROBE = "_toolbench_view_probe";

/** The widget view rendering `el`: anywidget calls model.on callbacks with the view as `this`. */
function viewOf(model) {
  let view = null;
  const probe = function () { view = this; };
  model.on(`change:${PROBE}`, probe);
  try {
    model.set(PROBE, `${Date.now()}-${Math.random()}`);  // local only: never saved
  } finally {
    model.off(`change:${PROBE}`, probe);
  }
  return view && typeof view.processLuminoMessage === "function" ? view : null;
}

// -- The frame's own guards (issue 43): a view that leaves its document has ended, and a
// message over the kernel's bound never reaches the comm. ----------------------------------
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;  // bridge.py's MAX_MESSAGE_BYTES (a test compares)
const FRAME_LEAVING = "toolbench/frame";    // policy.py's FRAME_LEAVING, posted by the bootstrap
const INVALID_REQUEST = -32600;

/** Watches `frame` for the end of its first document and calls `ended(how)` once: the
 * bootstrap's word that the document is being replaced (it comes before the next page can
 * post), or a second `load` (a page the bootstrap could not warn about). CSP cannot stop a
 * frame from navigating itself, so a view that does has ended. Returns the test for a
 * message: true when it is the bootstrap's word (taken here, never relayed). */
function watchNavigation(frame, ended) {
  let loads = 0;
  let done = false;
  const end = (how) => {
    if (done) return;
    done = true;
    ended(how);
  };
  frame.addEventListener("load", () => {
    loads += 1;
    if (loads > 1) end("a second load of the frame");
  });
  return (data) => {
    if (!data || typeof data !== "object" || !Object.hasOwn(data, FRAME_LEAVING)) return false;
    end(String(data[FRAME_LEAVING]).slice(0, 40));
    return true;
  };
}

/** The note shown where a navigated view was. */
function endedNote(how) {
  const note = document.createElement("div");
  note.className = "toolbench-app-ended";
  note.style.cssText = "padding:4px 8px;color:var(--jp-ui-font-color2, #666);font-style:italic";
  note.textContent = `This view navigated away from its document (${how}) and was closed: `
    + "nothing more is relayed to or from it.";
  return note;
}

/** The message's size in UTF-8 bytes as the comm would carry it; null when it is not JSON. */
function messageBytes(data) {
  let text;
  try { text = JSON.stringify(data); } catch (e) { return null; }
  if (typeof text !== "string") return null;
  if (text.length > MAX_MESSAGE_BYTES) return text.length;  // at least one byte per unit
  if (text.length * 3 <= MAX_MESSAGE_BYTES) return text.length;  // at most three
  return new TextEncoder().encode(text).length;
}

/** A message the comm must not carry (over the bound, or not JSON) is answered -32600 in
 * the frame itself when it has an id, and the kernel is told only its size. Returns true
 * when the message was refused here. */
function refusedInFront(frame, data, tell) {
  const bytes = messageBytes(data);
  if (bytes !== null && bytes <= MAX_MESSAGE_BYTES) return false;
  const why = bytes === null
    ? "message is not JSON; it was not sent to the kernel"
    : `message of ${bytes.toLocaleString("en-US")} bytes is over the limit of `
      + `${MAX_MESSAGE_BYTES.toLocaleString("en-US")} bytes per message; it was not sent `
      + "to the kernel";
  const id = data && typeof data === "object"
    && (typeof data.id === "string" || Number.isInteger(data.id)) ? data.id : null;
  if (id !== null && frame.contentWindow) {
    frame.contentWindow.postMessage(
      { jsonrpc: "2.0", id, error: { code: INVALID_REQUEST, message: why } }, "*");
  }
  tell({ kind: "refused", id, bytes, why });
  return true;
}

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
  const leaving = watchNavigation(frame, (how) => {  // the view has ended: say so, remove it
    tell({ kind: "navigated", how });
    links.after(endedNote(how));
    removeFrame();
  });
  el.append(frame, links);
  let closing = false;
  let removed = false;
  let holder = null;  // the hidden div a parked frame lives in
  let timer = null;
  let answered = false;

  const tell = (content) => {
    try { model.send(content); } catch (e) { /* a closed comm: the kernel is gone */ }
  };
  const removeFrame = () => {
    if (removed) return;
    removed = true;
    if (timer !== null) clearTimeout(timer);
    frame.remove();
    if (holder) holder.remove();
    window.removeEventListener("message", onMessage);
  };
  const onMessage = (event) => {
    if (event.source !== frame.contentWindow || !frame.contentWindow) return;
    const data = event.data;
    if (leaving(data) || refusedInFront(frame, data, tell)) return;
    tell({ kind: "rpc", message: data });
    if (closing && !answered && data && data.id === TEARDOWN_ID && data.method === undefined) {
      // Answered (once: a view cannot keep its frame by answering again). What the view
      // posted just before its answer can arrive just after it (Chromium does not keep the
      // order), so the frame stays a moment longer for it.
      answered = true;
      if (timer !== null) clearTimeout(timer);
      timer = setTimeout(removeFrame, ANSWERED_GRACE_MS);
    }
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

  const park = () => {  // keep the frame's document alive while its output leaves the page
    if (removed || !frame.isConnected || typeof Element.prototype.moveBefore !== "function") {
      return;
    }
    if (!holder) {
      holder = document.createElement("div");
      holder.className = "toolbench-app-parked";
      holder.style.cssText = "position:fixed;left:-10000px;top:0;width:1px;height:1px;"
        + "overflow:hidden;visibility:hidden;pointer-events:none";
      holder.setAttribute("aria-hidden", "true");
      document.body.append(holder);
    }
    if (frame.parentNode === holder) return;
    try { holder.moveBefore(frame, null); } catch (e) { /* not movable: it goes with the output */ }
  };
  const unpark = () => {
    if (removed || closing || !holder || frame.parentNode !== holder || !el.isConnected) return;
    try { el.moveBefore(frame, links); } catch (e) { return; }
    holder.remove();
    holder = null;
  };

  const teardown = () => {
    if (closing || removed) return;
    closing = true;
    if (!frame.isConnected || !frame.contentWindow) {  // nothing live to tell
      tell({ kind: "teardown", state: "gone", id: TEARDOWN_ID });
      removeFrame();
      return;
    }
    tell({ kind: "teardown", state: "sent", id: TEARDOWN_ID });
    frame.contentWindow.postMessage(
      { jsonrpc: "2.0", id: TEARDOWN_ID, method: "ui/resource-teardown", params: {} }, "*");
    timer = setTimeout(() => {
      timer = null;
      if (!removed) tell({ kind: "teardown", state: "unanswered", id: TEARDOWN_ID });
      removeFrame();
    }, TEARDOWN_WAIT_MS);
  };
  model.on("msg:custom", (msg) => {
    if (msg && msg.kind === "rpc" && frame.contentWindow && !closing) {
      frame.contentWindow.postMessage(msg.message, "*");
    } else if (msg && msg.kind === "teardown") {
      teardown();
    }
  });

  const view = viewOf(model);
  if (view) {  // the frame's last moment in the page, before the output's DOM is removed
    const own = view.processLuminoMessage;
    view.processLuminoMessage = function (msg) {
      if (msg && msg.type === "before-detach") park();
      else if (msg && msg.type === "after-attach") unpark();
      return own.call(this, msg);
    };
  }

  const light = document.body.dataset.jpThemeLight;
  tell({ kind: "context", theme: light === "false" ? "dark" : "light",
         width: el.clientWidth || null });

  return () => {  // the view is removed (output cleared, cell re-run, widget closed)
    park();  // a widget closed from the kernel is still in the page here
    teardown();
  };
}

export default { render };

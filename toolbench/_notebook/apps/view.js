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

// -- issue 43: a loading placeholder, the host's context, fullscreen --------------------------
// Each returns its own cleanup, run before the frame is parked and torn down.
const LOADING_TEXT = "loading the view…";
const LOADING_FALLBACK_MS = 5000;  // after initialized, a view that never reports its size
const CONTEXT_DEBOUNCE_MS = 150;

/** Calls `on(data)` for each message this view's own frame posts (never another's). */
function fromFrame(frame, on) {
  const listener = (event) => {
    if (event.source === frame.contentWindow && frame.contentWindow) on(event.data);
  };
  window.addEventListener("message", listener);
  return () => window.removeEventListener("message", listener);
}

/** "loading the view…" over the frame until the view reports its size (size-changed), or
 * LOADING_FALLBACK_MS after it said initialized. It never takes a click (pointer-events). */
function showLoading(el, frame) {
  const cover = document.createElement("div");
  cover.className = "toolbench-app-loading";
  cover.textContent = LOADING_TEXT;
  cover.style.cssText = "position:absolute;left:0;top:0;right:0;display:flex;"
    + "align-items:center;justify-content:center;pointer-events:none;z-index:1;"
    + "color:var(--jp-ui-font-color2,#666);background:var(--jp-layout-color1,#fff);"
    + "font-size:var(--jp-ui-font-size1,13px)";
  const fit = () => { cover.style.height = frame.style.height; };
  fit();
  if (!el.style.position) el.style.position = "relative";
  el.prepend(cover);
  let timer = null;
  const done = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    cover.remove();
    stop();
  };
  const stop = fromFrame(frame, (data) => {
    const method = data && data.method;
    if (method === "ui/notifications/size-changed") done();
    else if (method === "ui/notifications/initialized" && timer === null && cover.isConnected) {
      timer = setTimeout(done, LOADING_FALLBACK_MS);
    }
  });
  const watch = new MutationObserver(fit);  // the frame's height follows the kernel's
  watch.observe(frame, { attributes: true, attributeFilter: ["style"] });
  return () => { watch.disconnect(); done(); };
}

/** The theme JupyterLab (or Notebook 7) shows now. */
function themeNow() {
  return document.body.dataset.jpThemeLight === "false" ? "dark" : "light";
}

/** Tells the kernel the theme, the container's size and the display mode whenever one
 * changes (debounced); the kernel sends the view host-context-changed once it is
 * initialized. `box()` is what the view fills now (the output, or the fullscreen panel). */
function watchHost(el, tell, state) {
  let timer = null;
  const send = () => {
    timer = null;
    const box = state.box();
    const fullscreen = state.mode === "fullscreen";
    // No mode here: a late report must never undo a mode the view has asked for since;
    // the mode is said only when the person closes fullscreen (offerFullscreen).
    tell({ kind: "context", theme: themeNow(), width: box.clientWidth || null,
           height: fullscreen ? (box.clientHeight || null) : null });
  };
  const soon = () => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(send, CONTEXT_DEBOUNCE_MS);
  };
  const themes = new MutationObserver(soon);
  themes.observe(document.body, { attributes: true,
    attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"] });
  const sizes = typeof ResizeObserver === "function" ? new ResizeObserver(soon) : null;
  if (sizes) sizes.observe(el);
  state.changed = (box) => {  // the display mode changed: watch the new box, say so now
    if (sizes) { sizes.disconnect(); sizes.observe(box); }
    soon();
  };
  return () => {
    if (timer !== null) clearTimeout(timer);
    themes.disconnect();
    if (sizes) sizes.disconnect();
  };
}

/** Fullscreen, as the view asked (the kernel sets display_mode): the frame is moved, with the
 * state-preserving Element.moveBefore, into a panel over JupyterLab's main area (or the whole
 * window where there is none, as in Notebook 7), with a close button; Escape closes it too.
 * Closing, or the view asking for inline, moves it back. Without moveBefore (which an iframe
 * needs to keep its document), the panel is not offered and the view stays inline. */
function offerFullscreen(model, el, frame, links, tell, state) {
  let panel = null;
  const area = () => {
    const main = document.getElementById("jp-main-dock-panel");
    const r = main && main.getBoundingClientRect();
    return r && r.width > 0 && r.height > 0 ? r : null;
  };
  const place = () => {
    if (!panel) return;
    const r = area();
    panel.style.left = r ? `${r.left}px` : "0";
    panel.style.top = r ? `${r.top}px` : "0";
    panel.style.width = r ? `${r.width}px` : "100vw";
    panel.style.height = r ? `${r.height}px` : "100vh";
  };
  const onKey = (event) => {
    if (event.key === "Escape" && panel) {
      event.preventDefault();
      event.stopPropagation();
      leave(true);
    }
  };
  const enter = () => {
    if (panel || !frame.isConnected || typeof Element.prototype.moveBefore !== "function") {
      return false;
    }
    panel = document.createElement("div");
    panel.className = "toolbench-app-fullscreen";
    panel.setAttribute("role", "dialog");
    panel.setAttribute("aria-label", "MCP App view, fullscreen");
    panel.style.cssText = "position:fixed;z-index:10000;display:flex;flex-direction:column;"
      + "background:var(--jp-layout-color0,#fff);box-sizing:border-box";
    const bar = document.createElement("div");
    bar.style.cssText = "display:flex;justify-content:flex-end;padding:4px;flex:none";
    const close = document.createElement("button");
    close.className = "toolbench-app-fullscreen-close";
    close.textContent = "✕ Close fullscreen (Esc)";
    close.title = "Back to the output cell";
    close.onclick = () => leave(true);
    bar.append(close);
    panel.append(bar);
    document.body.append(panel);
    place();
    try {
      panel.moveBefore(frame, null);
    } catch (e) {
      panel.remove();
      panel = null;
      return false;
    }
    frame.style.flex = "1 1 0px";
    frame.style.minHeight = "0";
    window.addEventListener("resize", place);
    document.addEventListener("keydown", onKey, true);
    close.focus();
    state.mode = "fullscreen";
    state.changed(frame);
    return true;
  };
  const leave = (byPerson) => {
    if (!panel) return;
    window.removeEventListener("resize", place);
    document.removeEventListener("keydown", onKey, true);
    if (frame.parentNode === panel && el.isConnected) {
      try { el.moveBefore(frame, links); } catch (e) { /* it goes with the panel */ }
    }
    frame.style.flex = "";
    frame.style.minHeight = "";
    frame.style.height = `${model.get("height")}px`;
    panel.remove();
    panel = null;
    state.mode = "inline";
    state.changed(el);
    if (byPerson) tell({ kind: "context", theme: themeNow(), mode: "inline",
                         width: el.clientWidth || null, height: null });
  };
  const follow = () => {
    if (model.get("display_mode") === "fullscreen") {
      if (!enter()) {  // not possible here: the kernel (and the view) hear it stayed inline
        tell({ kind: "context", theme: themeNow(), mode: "inline",
               width: el.clientWidth || null, height: null });
      }
    } else {
      leave(false);
    }
  };
  model.on("change:display_mode", follow);
  model.on("change:height", () => { if (panel) frame.style.height = ""; });
  if (model.get("display_mode") === "fullscreen") setTimeout(follow, 0);
  return { stop: () => { model.off("change:display_mode", follow); leave(false); },
           leave: () => leave(true) };
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
    stopHost();  // its placeholder, watchers and any fullscreen panel go with it
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

  // issue 43: the placeholder, the host's context, fullscreen (their own blocks, above)
  const hostState = { mode: "inline", box: () => null, changed: () => {} };
  const stopLoading = showLoading(el, frame);
  const fullscreen = offerFullscreen(model, el, frame, links, tell, hostState);
  hostState.box = () => (hostState.mode === "fullscreen" ? frame : el);
  const stopWatching = watchHost(el, tell, hostState);
  if (view) {  // an output leaving the page takes its fullscreen panel with it
    const own = view.processLuminoMessage;
    view.processLuminoMessage = function (msg) {
      if (msg && msg.type === "before-detach") fullscreen.leave();
      return own.call(this, msg);
    };
  }
  let hostStopped = false;
  const stopHost = () => {  // fullscreen first: leaving it re-points the size watcher
    if (hostStopped) return;
    hostStopped = true;
    fullscreen.stop();
    stopLoading();
    stopWatching();
  };

  return () => {  // the view is removed (output cleared, cell re-run, widget closed)
    stopHost();
    park();  // a widget closed from the kernel is still in the page here
    teardown();
  };
}

// -- issue 46: the first view at once ---------------------------------------------------------
// A sandboxed frame runs in its own renderer process, and the page's first one pays for
// starting it (a later frame reuses it while one is alive). The warm-up model (ViewWarmUp,
// made once per kernel when a server with views connects, never displayed) keeps one hidden
// frame with an empty document of toolbench's own in the page, so the first view's frame
// finds that process running. Nothing of any server's is in it, and nothing can see it.
const WARM_DOCUMENT = "<!doctype html><meta http-equiv=\"Content-Security-Policy\" "
  + "content=\"default-src 'none'\"><title>toolbench warm-up</title>";

/** anywidget's per-model hook: for the warm-up model only, the hidden frame (removed when
 * the model goes: the kernel restarts or the page closes). A view's model has no `warm`. */
function initialize({ model }) {
  if (model.get("warm") !== true) return undefined;
  const holder = document.createElement("div");
  holder.className = "toolbench-app-warm";
  holder.setAttribute("aria-hidden", "true");
  holder.style.cssText = "position:fixed;left:-10000px;top:0;width:1px;height:1px;"
    + "overflow:hidden;visibility:hidden;pointer-events:none";
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");  // a view's frame: the same process
  frame.setAttribute("tabindex", "-1");
  frame.setAttribute("title", "toolbench warm-up (empty, hidden)");
  frame.srcdoc = WARM_DOCUMENT;
  holder.append(frame);
  document.body.append(holder);
  return () => holder.remove();
}

export default { initialize, render };

"""The frame's policy, built from a view's ``_meta.ui`` (DESIGN.md, "MCP Apps", "The frame").

A view is framed ``<iframe sandbox="allow-scripts" srcdoc=...>``: an opaque origin that cannot
reach the notebook's page, cookies, kernel or other views. What it may load is a
Content-Security-Policy ``<meta>`` inserted first in its ``<head>``, built from
``_meta.ui.csp`` as the MCP Apps specification maps it. Every declared domain is checked: one
that is not a plain ``https://`` origin (``https://*.example.com`` is allowed) is dropped
and noted, and with ``Bench(egress=...)`` one outside the allowlist is dropped too, so a
view never gets a looser policy than the bench itself. ``permissions`` map to the frame's
``allow``; nothing else is granted.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolbench._core import html as _html
from toolbench._core.ids import Destination, Egress

SANDBOX: Final = "allow-scripts"
"""The frame's ``sandbox``, exactly: no ``allow-same-origin``, no popups, no forms."""
MIN_HEIGHT, MAX_HEIGHT, DEFAULT_HEIGHT = 40, 4000, 360
"""The frame's height bounds (px), and its height until the view says its own."""
CSP_KEYS: Final = {"connectDomains": ("connect-src",),
                   "resourceDomains": ("script-src", "style-src", "img-src", "font-src",
                                       "media-src"),
                   "frameDomains": ("frame-src",), "baseUriDomains": ("base-uri",)}
"""Which directives each ``_meta.ui.csp`` list feeds."""
_BASE: Final = {"connect-src": (), "script-src": ("'unsafe-inline'",),
                "style-src": ("'unsafe-inline'",), "img-src": ("data:",),
                "font-src": ("data:",), "media-src": ("data:",), "frame-src": (),
                "base-uri": ()}
PERMISSIONS: Final = {"camera": "camera", "microphone": "microphone",
                      "geolocation": "geolocation", "clipboardWrite": "clipboard-write"}
"""``_meta.ui.permissions`` keys and the frame ``allow`` feature each grants."""
MAX_DOMAINS = 32
_ORIGIN = re.compile(r"https://(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*"
                     r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:[0-9]{1,5})?")


@dataclass(frozen=True)
class Policy:
    """What a frame is given: its CSP, ``allow``, border, and what was dropped and why."""

    csp: str
    allow: str
    prefers_border: bool
    domain: str | None
    csp_declared: dict[str, list[str]]
    permissions: tuple[str, ...]
    warnings: tuple[str, ...]


def domain_problem(value: object, egress: Egress | None) -> str | None:
    """Why ``value`` may not enter a CSP (None when it may): the value and the rule."""
    shown = _html.shorten(repr(value), 80)
    if not isinstance(value, str):
        return f"{shown} is not a string"
    if value.strip() == "*":
        return f"{shown} allows every origin; name each https:// origin instead"
    if re.search(r"[\s;,'\"]", value):
        return (f"{shown} holds a space, a quote, a comma or a semicolon; a domain is one "
                "plain https:// origin (a quoted keyword such as 'unsafe-eval' is never "
                "accepted)")
    if not value.lower().startswith("https://"):
        return f"{shown} is not https:// (only https:// origins are allowed)"
    if not _ORIGIN.fullmatch(value.lower().rstrip("/")):
        return (f"{shown} is not a plain https:// origin (https://host[:port], a wildcard "
                "only as https://*.host)")
    host = value.lower().rstrip("/")[len("https://"):].split(":")[0]
    if egress is not None:
        if host.startswith("*."):
            return f"{shown} is a wildcard, and Bench(egress=...) lists exact hosts only"
        if not egress.allows(Destination.remote(host)):
            return (f"{shown} is outside Bench(egress=...): "
                    f"{egress.refusal(Destination.remote(host))}")
    return None


LOCAL_SOURCES: Final = ("blob:",)
"""Sources a view's ``resourceDomains`` may name besides https:// origins: a ``blob:`` URL
holds only what the frame itself made, so it reaches no network and grants nothing that
``'unsafe-inline'`` does not (``anywidget-mcp`` loads its widgets' modules so; issue 43)."""


def local_source(key: str, value: object) -> bool:
    """Whether ``value`` is a local scheme a view may use for its own resources."""
    return key == "resourceDomains" and isinstance(value, str) and value in LOCAL_SOURCES


def build_policy(ui: Mapping[str, Any] | None, egress: Egress | None) -> Policy:
    """The frame's policy from a view's ``_meta.ui`` (a missing or bad ``ui``: the strictest)."""
    ui = ui if isinstance(ui, Mapping) else {}
    notes: list[str] = []
    directives = {k: list(v) for k, v in _BASE.items()}
    declared: dict[str, list[str]] = {}
    csp = ui.get("csp")
    if csp is not None and not isinstance(csp, Mapping):
        notes.append(f"_meta.ui.csp {_html.shorten(repr(csp), 80)} is not an object; ignored")
        csp = {}
    for key, value in (csp or {}).items():
        targets = CSP_KEYS.get(str(key))
        if targets is None:
            notes.append(f"_meta.ui.csp.{_html.shorten(str(key), 40)} is not a CSP key the "
                         f"bench knows ({sorted(CSP_KEYS)}); ignored")
            continue
        values = value if isinstance(value, list | tuple) else [value]
        if len(values) > MAX_DOMAINS:
            notes.append(f"_meta.ui.csp.{key} lists {len(values)} domains; only the first "
                         f"{MAX_DOMAINS} are considered")
        for domain in values[:MAX_DOMAINS]:
            problem = None if local_source(str(key), domain) else domain_problem(domain, egress)
            if problem is not None:
                notes.append(f"_meta.ui.csp.{key}: dropped {problem}")
                continue
            clean = str(domain).lower().rstrip("/")
            declared.setdefault(str(key), []).append(clean)
            for directive in targets:
                if clean not in directives[directive]:
                    directives[directive].append(clean)
    parts = ["default-src 'none'"]
    parts += [f"{name} {' '.join(values) or chr(39) + 'none' + chr(39)}"
              for name, values in directives.items()]
    parts.append("object-src 'none'")
    allow, granted = _permissions(ui.get("permissions"), notes)
    domain = ui.get("domain")
    if domain is not None and not isinstance(domain, str):
        notes.append(f"_meta.ui.domain {_html.shorten(repr(domain), 60)} is not a string")
        domain = None
    border = ui.get("prefersBorder")
    return Policy("; ".join(parts), allow, border is True,
                  _html.shorten(domain, 200) if domain else None, declared, granted,
                  tuple(notes))


def _permissions(value: object, notes: list[str]) -> tuple[str, tuple[str, ...]]:
    if value is None:
        return "", ()
    if not isinstance(value, Mapping):
        notes.append(f"_meta.ui.permissions {_html.shorten(repr(value), 80)} is not an "
                     "object; nothing is granted")
        return "", ()
    granted: list[str] = []
    for key, wanted in value.items():
        feature = PERMISSIONS.get(str(key))
        if feature is None:
            notes.append(f"_meta.ui.permissions.{_html.shorten(str(key), 40)} is not one the "
                         f"bench grants ({sorted(PERMISSIONS)}); ignored")
        elif wanted is not False and wanted is not None:
            granted.append(str(key))
    return "; ".join(PERMISSIONS[k] for k in granted), tuple(granted)


def clamp_height(value: object) -> int | None:
    """A height the view asked for, within the bounds; None when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return int(min(max(value, MIN_HEIGHT), MAX_HEIGHT))


HTML_WHITESPACE: Final = "\t\n\f\r "
"""HTML's own whitespace (TAB, LF, FF, CR, SPACE): the only characters the parser skips
before a ``<!DOCTYPE>``. Python's ``\\s`` is wider (U+00A0, U+001C-U+001F, U+0085, every
Unicode space), and each of those, to HTML, is text that opens ``<body>``."""
_DOCTYPE = re.compile(r"<!doctype[^>]*>", re.IGNORECASE)
_SERVER_BASE = re.compile(r"<base[\t\n\f\r />]", re.IGNORECASE)
FRAME_BASE: Final = '<base href="about:srcdoc">'
"""The framed document's base: a srcdoc frame inherits the notebook page's base URL, so
without it ``<a href="#x">`` (or ``location.href = "#x"``) navigates the frame to the
notebook's own URL. Against ``about:srcdoc`` a fragment stays in the document (checked in
Chromium), and no relative URL resolves at all."""
FRAME_LEAVING: Final = "toolbench/frame"
"""The key of the one message the framed document's bootstrap posts, ``{FRAME_LEAVING: how}``
(``beforeunload``, or ``replaced``): the document is going (the front end takes it and ends
the view; the kernel never sees it)."""
FRAME_BOOTSTRAP: Final = (
    "<script>(() => { const host = window.parent; const say = (how) => { try { "
    'host.postMessage({"' + FRAME_LEAVING + '": how}, "*"); } catch (e) { /* going anyway */ }'
    ' }; addEventListener("beforeunload", () => say("beforeunload"), true);'
    " const root = document.documentElement; new MutationObserver((records) => {"
    " if (records.some((r) => Array.prototype.includes.call(r.removedNodes, root)))"
    ' say("replaced"); }).observe(document, { childList: true }); })();</script>')
"""Runs before any of the server's script, and tells the front end that the document is
going: at ``beforeunload``, as the frame starts to navigate (before the request leaves;
the next page's first messages would arrive before the frame's ``load`` event, and a
navigation answered 204 never loads at all), and when the view replaces its own document
(``document.open`` erases every event listener, this one too, but not a
``MutationObserver``: it sees the document's root removed). Checked in Chromium."""


def framed(document: str, csp: str, *, server_base: bool = False) -> str:
    """The server's document with the host's head first, before any of the server's tags:
    ``<base href="about:srcdoc">``, the CSP ``<meta>`` and the bootstrap ``<script>``.

    Only a ``<!DOCTYPE>`` preceded by nothing but HTML's own whitespace goes before them
    (one leading U+FEFF, an encoding mark, is dropped). A document that starts with anything
    else gets them at offset 0: the parser puts a ``<meta>`` it meets first into an implied
    ``<head>`` and merges the server's own ``<html>``/``<head>`` into it, so no leading
    character, comment, script or attribute of the server's can keep the policy from
    applying (such a document renders in quirks mode, its doctype then being late).

    The ``<base>`` goes before the ``<meta>`` so that the policy's ``base-uri 'none'`` does
    not refuse it (a policy binds only what follows it); with ``server_base`` (the policy
    admits ``baseUriDomains``) a document that sets its own ``<base>`` keeps it instead.
    """
    document = document.removeprefix("\ufeff")
    meta = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">'
    base = "" if server_base and _SERVER_BASE.search(document) else FRAME_BASE
    start = len(document) - len(document.lstrip(HTML_WHITESPACE))
    doctype = _DOCTYPE.match(document, start)
    cut = doctype.end() if doctype is not None else 0
    return document[:cut] + base + meta + FRAME_BOOTSTRAP + document[cut:]


@dataclass(frozen=True)
class View:
    """One fetched view: the document as framed and its policy, or why there is none."""

    server: str
    uri: str
    mime_type: str | None = None
    bytes: int = 0
    html: str | None = None
    """The document as framed (the CSP ``<meta>`` first); None with an ``error``."""
    sha256: str | None = None
    """SHA-256 of the server's document as sent (before the CSP was inserted)."""
    policy: Policy | None = None
    error: str | None = None
    failure: str | None = None
    """With an ``error``, its kind in words that stay the same while the failure does (no
    timings, no server text): what a tool's fingerprint covers when its view is missing."""

"""Catalog snapshots: one row per tool, resource, template and prompt, each with a fingerprint.

A snapshot says what a server declared at one moment. Its *fingerprint* is the SHA-256 of the
canonical JSON (sorted keys, no spaces, UTF-8) of what a model or a user relies on: the name,
title and description, the schemas (tools), the URI and MIME type (resources), the arguments
(prompts), and the annotations; and for a tool, its ``execution`` (whether it runs as a task)
and its ``_meta.ui`` (its MCP App view: ``ui``, and the older ``ui/resourceUri``), the parts
of ``_meta`` the bench acts on, with the state of the view's HTML when it declares one
(``ui["view"]``: ``{"sha256": ...}`` of the document as sent, or ``{"error": ...}`` when it
could not be fetched; the apps' ``view_states``). Snapshots keep the hash, never the HTML,
so a changed view is a ``ui`` row in a diff.

Those two enter the hash only when the tool declares them, so the fingerprint of an item
without them is what it was before they counted, and pins made then stay valid; a pin made
before the view's HTML counted is renewed quietly when nothing else changed
(``pinned_before_view_hash``). Two listings with the same fingerprint declared the same
thing; any change to any of those fields changes it. Fingerprints are computed once, when a
listing is applied (``fingerprint_tools``), never per call: the pin check on the call path is
a set lookup.

**Items.** Each item is a plain JSON dict (``item_from_spec`` and friends): ``kind``,
``name`` (the key items are matched by: a tool's or prompt's own, unprefixed name; a
resource's URI; a template's URI template), the declared fields, and ``fingerprint``. The
journal stores them as they are (``toolbench._bench.overtime.snapshot_store``), and
``snapshot_frame``
turns a list of ``(server, taken, item)`` into the DataFrame ``bench.snapshot()`` returns.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from toolbench._core.client import ToolSpec

if TYPE_CHECKING:
    import pandas as pd

KINDS = ("tool", "resource", "resource_template", "prompt")
SNAPSHOT_COLUMNS = ("server", "kind", "name", "fingerprint", "taken", "title", "description",
                    "input_schema", "output_schema", "annotations", "uri", "mime_type",
                    "arguments", "execution", "ui")
DECLARED = ("title", "description", "input_schema", "output_schema", "annotations", "uri",
            "mime_type", "arguments", "execution", "ui")
"""The declared fields of an item, in the order a diff reports them."""
UI_META = ("ui", "ui/resourceUri")
"""The keys of a tool's ``_meta`` that declare its MCP App view (``ui`` in a snapshot)."""
VIEW = "view"
"""The key of a tool's ``ui`` that holds its view's HTML state (``sha256`` or ``error``); a
``_meta`` key never lands there (only ``UI_META`` keys are taken)."""
_WHEN_DECLARED = ("execution", "ui")
"""Fingerprinted only when present, so older fingerprints of items without them hold."""
_FINGERPRINTED: dict[str, tuple[str, ...]] = {
    "tool": ("name", "title", "description", "input_schema", "output_schema", "annotations",
             "execution", "ui"),
    "resource": ("name", "title", "description", "uri", "mime_type", "annotations"),
    "resource_template": ("name", "title", "description", "uri", "mime_type", "annotations"),
    "prompt": ("name", "title", "description", "arguments"),
}


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text; a value JSON cannot hold becomes its repr."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=repr)


def fingerprint(item: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of the item's fingerprinted fields."""
    kind = str(item.get("kind", "tool"))
    fields = _FINGERPRINTED.get(kind, _FINGERPRINTED["tool"])
    payload = {"kind": kind, **{f: item.get(f) for f in fields
                                if f not in _WHEN_DECLARED or item.get(f) is not None}}
    text = canonical_json(payload)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def pinned_before_execution_and_ui(pin: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    """Whether ``pin`` predates ``execution`` and ``_meta.ui`` counting, and the item has
    changed in nothing else: its stored item has neither key, and its fingerprint is the
    item's without them. Such a pin can be renewed quietly (trust on first use of the two
    fields), where any other fingerprint change is a change."""
    old = pin.get("item")
    if not isinstance(old, Mapping) or any(k in old for k in _WHEN_DECLARED):
        return False
    without = {k: v for k, v in item.items() if k not in _WHEN_DECLARED}
    return bool(pin.get("fingerprint") == fingerprint(without))


def item_from_spec(spec: ToolSpec, name: str | None = None,
                   view: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A tool as a snapshot item (``name``: its own, unprefixed name), fingerprinted;
    ``view`` is the state of its view's HTML (``ui["view"]``), when it declares a view."""
    ui = ui_meta(spec.meta)
    if ui is not None and view is not None:
        ui[VIEW] = dict(view)
    item: dict[str, Any] = {
        "kind": "tool", "name": spec.name if name is None else name, "title": spec.title,
        "description": spec.description, "input_schema": spec.input_schema,
        "output_schema": spec.output_schema, "annotations": spec.annotations,
        "execution": declared_execution(spec.execution), "ui": ui,
    }
    item["fingerprint"] = fingerprint(item)
    return item


def pinned_before_view_hash(pin: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    """Whether ``pin`` is of this tool as it was before its view's HTML counted, and nothing
    else changed: the item has a view state, and the pin's fingerprint is the item's without
    it. Any pin made since covers the state in its fingerprint, so no other pin matches (a
    pin kept without its item is told apart too). Such a pin is renewed quietly: trust on
    first use of the view's HTML, as of a new tool."""
    ui = item.get("ui")
    if not isinstance(ui, Mapping) or VIEW not in ui:
        return False
    without = {**item, "ui": {k: v for k, v in ui.items() if k != VIEW}}
    return bool(pin.get("fingerprint") == fingerprint(without))


def declared_execution(execution: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A tool's ``execution`` without what says only the default (``taskSupport``
    ``"forbidden"``), or None: declaring the default is declaring nothing."""
    if not isinstance(execution, Mapping):
        return None
    kept = {k: v for k, v in execution.items()
            if not (k == "taskSupport" and v == "forbidden")}
    return kept or None


def ui_meta(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The part of a tool's ``_meta`` that declares its view, or None when it has none."""
    if not isinstance(meta, Mapping):
        return None
    found = {key: meta[key] for key in UI_META if meta.get(key) is not None}
    return found or None


def item_from_row(kind: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """A resource, template or prompt row (as ``bench.resources()`` lists it) as an item."""
    if kind == "prompt":
        item: dict[str, Any] = {"kind": kind, "name": row.get("prompt") or row.get("name"),
                                "title": row.get("title"), "description": row.get("description"),
                                "arguments": row.get("arguments")}
    else:
        item = {"kind": kind, "name": row.get("uri"), "title": row.get("title"),
                "description": row.get("description"), "uri": row.get("uri"),
                "mime_type": row.get("mime_type"), "annotations": row.get("annotations"),
                "label": row.get("name")}
    item["fingerprint"] = fingerprint(item)
    return item


def fingerprint_tools(specs: Iterable[tuple[str, ToolSpec]],
                      views: Mapping[str, Mapping[str, str]] | None = None,
                      ) -> dict[str, dict[str, Any]]:
    """``{own name: item}`` for ``(own name, spec)`` pairs: what a listing is worth keeping;
    ``views`` gives the state of each tool's view HTML, by own name."""
    views = views or {}
    return {name: item_from_spec(spec, name, views.get(name)) for name, spec in specs}


def key(item: Mapping[str, Any]) -> tuple[str, str]:
    """What two items are matched by: (kind, name)."""
    return str(item.get("kind")), str(item.get("name"))


def snapshot_frame(rows: Iterable[tuple[str, datetime, Mapping[str, Any]]]) -> pd.DataFrame:
    """The snapshot DataFrame of ``(server, taken, item)`` triples, sorted."""
    import pandas as pd

    data = [{"server": server, "taken": taken, **{c: item.get(c) for c in SNAPSHOT_COLUMNS
                                                  if c not in ("server", "taken")}}
            for server, taken, item in rows]
    data.sort(key=lambda r: (r["server"], KINDS.index(r["kind"]) if r["kind"] in KINDS else 9,
                             str(r["name"])))
    df = pd.DataFrame(data, columns=list(SNAPSHOT_COLUMNS), dtype=object)
    if len(df):
        df["taken"] = pd.to_datetime(df["taken"], utc=True, format="ISO8601")
    df.attrs["toolbench"] = "snapshot"
    return df

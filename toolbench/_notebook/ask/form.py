"""A tool's input schema as an ipywidgets form: one field per property, errors beside it.

The form is a plain function of the schema so it can be built and tested without the
explorer around it. ``values()`` either returns arguments that already pass the schema or
marks the broken fields and raises, so a bad form never reaches a server. The schema is a
server's: building the form follows only local ``#/...`` pointers, at most ``MAX_REF_HOPS``
deep, and the check is ``_validate``'s (nothing fetched, re2 patterns, bounded work).

What the form shows is what is sent, and empty means "not sent": an optional field left
empty is omitted; a required field that is nullable sends ``null``; a required field that is
not nullable is flagged. A number is typed in a text box (:class:`NumberText`) that starts
empty or with the schema's default, never with a made-up 0 (which could break the schema's
``minimum``, and would be sent although nobody chose it). A checkbox cannot be empty, so an
optional boolean has a "send" box: ticked when the schema gives a default (shown), ticked as
soon as the value is edited.

Text boxes send their value on every key (``continuous_update=True``). Sending only on blur
was tried: the update and the click that caused the blur then reach the kernel together, and
ipykernel 7 handles a widget message that arrives while another is handled as a task of its
own, so the explorer's Call could run with the text from before the last edit (1 browser run in
4; its second edit of a field was never used at all when the click was deferred instead). Per
key, the value is in the kernel long before a person's click, and the ask forms' Accept and
Send wait ``SETTLE_S`` for a key still in flight (``ask.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import ipywidgets as widgets
from traitlets import CUnicode

from toolbench._core import html as _html
from toolbench._core.schema.validate import field_errors

_BLANK = "\u2014"  # the Dropdown label for "no value"
MAX_LABEL = 60
MAX_FIELDS = 200
"""More properties than this get one JSON box for the whole arguments, not a row each."""
WHOLE = "(arguments)"
MAX_HELP = 300
BOOLEAN_LABEL = "true"
"""Beside a boolean's own box: ticked means true (issue 37: it was an unlabelled box)."""
SEND_LABEL = "send this field"
"""Beside an optional boolean's second box: unticked leaves the field out of the answer."""
MAX_ROWS = 8
"""A multi-select's visible rows at most (it scrolls beyond)."""
_CLASS_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def css_class(prefix: str, name: str) -> str:
    """A CSS class naming ``name`` (a field or tool), so a test or a stylesheet can find it."""
    return prefix + _CLASS_SAFE.sub("_", name)[:80]


class NumberText(widgets.Text):  # type: ignore[misc]
    """A text box for an integer or number: empty means "no value", which an ``IntText``
    cannot hold. Its ``value`` is the text; setting a number stores its text (``5`` -> "5")."""

    value = CUnicode(help="the number as typed").tag(sync=True)


def parse_number(kind: str, text: str) -> int | float:
    """``text`` as the schema's integer or number; a ValueError names the value and the rule."""
    shown = _html.shorten(text, 40)
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{shown!r} is not {'an integer' if kind == 'integer' else 'a number'}"
                         ) from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{shown!r} is not a finite number")
    if kind == "number":
        return number
    try:
        return int(text)
    except ValueError:
        if number.is_integer():
            return int(number)
        raise ValueError(f"{shown!r} is not an integer (no fraction allowed)") from None


class FormError(ValueError):
    """The form holds invalid input; ``errors`` maps each broken field to its message."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        shown = "; ".join(f"{k}: {v}" for k, v in list(self.errors.items())[:3])
        super().__init__(f"invalid input in {len(self.errors)} field(s): {shown}")


MAX_REF_HOPS = 10
"""Local ``$ref`` hops followed for one field (a cycle or a long chain stops there)."""


def _pointer(root: Mapping[str, Any], ref: str) -> Any:
    """The value at a local JSON pointer ``#/a/b~1c/0``, or None; never leaves ``root``."""
    target: Any = root
    for raw in ref[2:].split("/"):
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(target, Mapping):
            target = target.get(part)
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target


def _resolve(schema: Any, root: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``, any ``#/...`` pointer) at
    most ``MAX_REF_HOPS`` deep; a remote or ``file:`` reference is left as is, never read."""
    if not isinstance(schema, Mapping):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and depth < MAX_REF_HOPS:
        merged = {**_resolve(_pointer(root, ref), root, depth + 1),
                  **{k: v for k, v in schema.items() if k != "$ref"}}
        return merged
    return dict(schema)


CHOICES = "x-toolbench-choices"
"""Where ``_classify`` puts a choice field's ``(value, label)`` pairs in its sub-schema."""
_PRIMITIVE = (str, int, float, bool)


def _label(value: Any, option: Mapping[str, Any] | None = None) -> str:
    """An option's label: its ``title`` when it is a non-empty string, else its value."""
    title = option.get("title") if option is not None else None
    return title if isinstance(title, str) and title.strip() else str(value)


def _titled(options: list[dict[str, Any]]) -> list[tuple[Any, str]] | None:
    """``[{"const": v, "title": t}, ...]`` (MCP's titled options) as choices, or None."""
    if not options or not all("const" in o and isinstance(o["const"], _PRIMITIVE)
                              for o in options):
        return None
    return [(o["const"], _label(o["const"], o)) for o in options]


def _choices(sub: Mapping[str, Any], root: Mapping[str, Any]) -> list[tuple[Any, str]] | None:
    """A schema's choices as ``(value, label)`` pairs: an ``enum`` of primitives (labelled by
    the legacy ``enumNames`` when it fits), or ``anyOf``/``oneOf`` of titled consts; None
    when it is neither. ``null`` is not a choice (an empty field stands for it)."""
    enum = sub.get("enum")
    if isinstance(enum, list) and enum:
        values = [v for v in enum if v is not None]
        if not values or not all(isinstance(v, _PRIMITIVE) for v in values):
            return None
        names = sub.get("enumNames")
        if isinstance(names, list) and len(names) == len(enum) \
                and all(isinstance(n, str) for n in names):
            labels = {i: n for i, n in enumerate(names)}
            return [(v, _label(v, {"title": labels[i]})) for i, v in enumerate(enum)
                    if v is not None]
        return [(v, str(v)) for v in values]
    for key in ("anyOf", "oneOf"):
        options = sub.get(key)
        if isinstance(options, list):
            return _titled([_resolve(o, root) for o in options])
    return None


def _classify(prop: Mapping[str, Any], root: Mapping[str, Any]) -> tuple[str, bool, dict[str, Any]]:
    """(kind, nullable, the non-null sub-schema) for one property.

    An ``enum`` sub-schema carries its choices as ``(value, label)`` pairs under
    ``CHOICES``; a ``multi`` one (an array of such choices) carries its items' choices.
    """
    sub = _resolve(prop, root)
    nullable = False
    for key in ("anyOf", "oneOf"):
        options = sub.get(key)
        if isinstance(options, list):
            real = [_resolve(o, root) for o in options]
            nulls = [o for o in real if o.get("type") == "null"]
            rest = [o for o in real if o.get("type") != "null"]
            nullable = nullable or bool(nulls)
            titled = _titled(rest)
            if titled is not None and len(rest) > 1:  # MCP's titled single-select
                merged = {k: v for k, v in sub.items() if k != key}
                return "enum", nullable, {**merged, CHOICES: titled}
            if len(rest) == 1:
                merged = {k: v for k, v in sub.items() if k != key}
                sub = {**rest[0], **merged}
            elif rest:
                return "json", nullable, sub
    if sub.get("type") == "array" or (sub.get("type") is None and "items" in sub):
        choices = _choices(_resolve(sub.get("items"), root), root)
        if choices is not None:  # MCP's multi-select (its options titled or not)
            return "multi", nullable, {**sub, CHOICES: choices}
    enum = sub.get("enum")
    if isinstance(enum, list) and enum:
        if None in enum:
            nullable = True
        choices = _choices(sub, root)
        if choices is not None:
            return "enum", nullable, {**sub, CHOICES: choices}
    if "const" in sub:
        return "enum", nullable, {**sub, "enum": [sub["const"]],
                                  CHOICES: [(sub["const"], str(sub["const"]))]}
    kind = sub.get("type")
    if isinstance(kind, list):
        types = [t for t in kind if t != "null"]
        nullable = nullable or "null" in kind
        kind = types[0] if len(types) == 1 else None
    if kind in ("string", "integer", "number", "boolean"):
        return str(kind), nullable, sub
    return "json", nullable, sub


@dataclass
class Field:
    """One property: its input widget, its error label and how to read a value out of it."""

    name: str
    kind: str
    required: bool
    nullable: bool
    schema: dict[str, Any]
    input: Any
    error: Any
    include: Any | None = None  # the "set" toggle of an optional number/boolean
    row: Any = None
    options: list[Any] = field(default_factory=list)

    def set_error(self, message: str | None) -> None:
        self.error.value = (
            "" if not message else
            f"<span style='color:#b00020'>{_html.escape(_html.shorten(message, 300))}</span>"
        )

    def read(self) -> tuple[bool, Any]:
        """(send it?, value); raises ValueError with a message for the user."""
        kind, value = self.kind, self.input.value
        if kind == "enum":
            index = self.input.index
            if index is None or (self.options and self.options[index] is _Blank):
                return self._empty()
            return True, self.options[index]
        if kind == "multi":  # the chosen options, in the order they are listed
            chosen = sorted(self.input.index or ())
            if not chosen and not self.required:
                return False, None
            low, high = _item_bounds(self.schema)
            if low is not None and len(chosen) < low:
                raise ValueError(f"{len(chosen)} chosen: choose at least {low}")
            if high is not None and len(chosen) > high:
                raise ValueError(f"{len(chosen)} chosen: choose at most {high}")
            return True, [self.options[i] for i in chosen]
        if kind == "string":
            return (True, value) if value != "" else self._empty()
        if kind in ("integer", "number"):
            text = str(value).strip()
            return (True, parse_number(kind, text)) if text else self._empty()
        if kind == "boolean":
            if self.include is not None and not self.include.value:
                return False, None
            return True, bool(value)
        text = str(value).strip()
        if not text:
            return self._empty()
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"not valid JSON ({exc})") from None
        want = self.schema.get("type")
        if parsed is None and self.nullable:
            return True, None
        if want == "array" and not isinstance(parsed, list):
            raise ValueError(f"expected a JSON array like [1, 2], got {type(parsed).__name__}")
        if want == "object" and not isinstance(parsed, dict):
            raise ValueError(
                f"expected a JSON object like {{\"key\": 1}}, got {type(parsed).__name__}")
        return True, parsed

    def _empty(self) -> tuple[bool, Any]:
        if not self.required:
            return False, None
        if self.nullable:
            return True, None
        raise ValueError("required: enter a value")


class _BlankOption:
    def __repr__(self) -> str:
        return "<blank>"


_Blank = _BlankOption()


class Form:
    """The widgets for one input schema and the arguments they hold."""

    def __init__(self, schema: Mapping[str, Any] | None) -> None:
        self.schema: dict[str, Any] = dict(schema) if isinstance(schema, Mapping) else {}
        self.fields: dict[str, Field] = {}
        self.errors: dict[str, str] = {}
        props = self.schema.get("properties")
        required = self.schema.get("required")
        req = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
        # One widget row per property costs the kernel thread (and the page) real time; a
        # schema with thousands of them gets one JSON box for the whole arguments instead.
        self.whole: Field | None = None
        rows: list[Any] = []
        if isinstance(props, Mapping) and len(props) > MAX_FIELDS:
            self.whole = _make_field(WHOLE, {"type": "object"}, False, {})
            rows = [widgets.HTML(
                f"<i>this tool takes {len(props):,} parameters (more than {MAX_FIELDS} shown "
                "one by one): write the arguments as one JSON object</i>"), self.whole.row]
        elif isinstance(props, Mapping):
            for name, prop in props.items():
                if isinstance(name, str):
                    self.fields[name] = _make_field(name, prop, name in req, self.schema)
            rows = [f.row for f in self.fields.values()]
        if not rows:
            rows = [widgets.HTML("<i>this tool takes no arguments</i>")]
        self.message = widgets.HTML("")
        self.widget = widgets.VBox([*rows, self.message])

    def __getitem__(self, name: str) -> Any:
        """The input widget of field ``name`` (tests and users set ``.value`` on it)."""
        return self.fields[name].input

    def values(self) -> dict[str, Any]:
        """The arguments, checked against the schema; raises FormError and marks fields."""
        errors: dict[str, str] = {}
        arguments: dict[str, Any] = {}
        if self.whole is not None:
            try:
                send, value = self.whole.read()
                arguments = dict(value) if send and value is not None else {}
            except ValueError as exc:
                errors[WHOLE] = str(exc)
        for name, f in self.fields.items():
            try:
                send, value = f.read()
            except ValueError as exc:
                errors[name] = str(exc)
                continue
            if send:
                arguments[name] = value
        # What could be read is checked against the schema too, so every broken field is
        # marked at once (a count of choices and a minimum elsewhere, say), not one per Accept.
        checked = field_errors(self.schema, arguments)
        if errors:  # a field that could not be read is missing here: its own message stands
            checked = {k: v for k, v in checked.items() if k in arguments}
        errors = {**checked, **errors}
        self.errors = errors
        for name, f in self.fields.items():
            f.set_error(errors.get(name))
        if self.whole is not None:
            self.whole.set_error(errors.get(WHOLE))
        others = {k: v for k, v in errors.items() if k not in self.fields and k != WHOLE}
        if errors:
            note = "; ".join(f"{k}: {v}" for k, v in others.items())
            self.message.value = (
                "<span style='color:#b00020'>fix the marked fields; nothing was sent"
                + (f" ({_html.escape(_html.shorten(note, 300))})" if note else "")
                + "</span>")
            raise FormError(errors)
        self.message.value = ""
        return arguments


def build_form(schema: Mapping[str, Any] | None) -> Form:
    """A form for a tool's input schema; the widget is ``form.widget``."""
    return Form(schema)


def _make_field(name: str, prop: Any, required: bool, root: Mapping[str, Any]) -> Field:
    kind, nullable, sub = _classify(prop, root)
    default = sub.get("default", None)
    has_default = "default" in sub and default is not None
    layout = widgets.Layout(width="320px")
    include = None
    options: list[Any] = []
    if kind == "enum":
        choices: list[tuple[Any, str]] = sub[CHOICES]
        options = [value for value, _ in choices]
        names = [label for _, label in choices]
        if not required or nullable or not has_default:
            options, names = [_Blank, *options], [_BLANK, *names]
        labels = [(_html.shorten(n, MAX_LABEL), i) for i, n in enumerate(names)]
        index = options.index(default) if has_default and default in options else 0
        if required and not nullable and not has_default and len(options) > 1:
            index = 1  # a required choice starts on the first real value
        box: Any = widgets.Dropdown(options=labels, value=index, layout=layout)
    elif kind == "multi":  # a list box: click one, Ctrl/⌘-click (or Shift) for several
        choices = sub[CHOICES]
        options = [value for value, _ in choices]
        chosen = tuple(i for i, v in enumerate(options)
                       if isinstance(default, list) and v in default)
        box = widgets.SelectMultiple(
            options=[(_html.shorten(label, MAX_LABEL), i) for i, (_, label) in
                     enumerate(choices)], value=chosen, rows=min(len(options), MAX_ROWS),
            layout=layout)
    elif kind == "string":
        box = widgets.Text(value=str(default) if has_default else "", layout=layout,
                           continuous_update=True,
                           placeholder="(empty: not sent)" if not required else "")
    elif kind in ("integer", "number"):
        start = default if isinstance(default, (int, float)) \
            and not isinstance(default, bool) else None
        box = NumberText(value="" if start is None else _number_text(start), layout=layout,
                         continuous_update=True, placeholder=_number_hint(kind, sub, required))
    elif kind == "boolean":
        box = widgets.Checkbox(value=bool(default) if has_default else False, indent=False,
                               description=BOOLEAN_LABEL, layout=widgets.Layout(width="auto"))
        box.tooltip = f"ticked: {name} is true; unticked: false"
    else:
        text = json.dumps(default, indent=1) if has_default else ""
        hint = {"array": "[ ... ]", "object": "{ ... }"}.get(str(sub.get("type")), "JSON")
        box = widgets.Textarea(value=text, placeholder=hint, rows=3, layout=layout,
                               continuous_update=True)
    if kind == "boolean" and not required:
        include = widgets.Checkbox(value=has_default, description=SEND_LABEL, indent=False,
                                   layout=widgets.Layout(width="auto", margin="0 0 0 2em"))
        include.tooltip = f"unticked: {name} is left out of the answer"
        toggle = include

        def _on_change(change: Any) -> None:
            toggle.value = True  # typing a value means "send it"

        box.observe(_on_change, names="value")
    mark = " <b style='color:#b00020' title='required'>*</b>" if required else ""
    help_text = sub.get("description")
    title = _html.escape(_html.shorten(str(help_text), MAX_HELP)) if help_text else ""
    type_note = kind if kind != "json" else str(sub.get("type") or "JSON")
    if kind == "multi":
        type_note = _multi_hint(sub, required)
    label = widgets.HTML(
        f"<span title='{title}'><code>{_html.escape(_html.shorten(name, MAX_LABEL))}</code>"
        f"{mark} <small style='color:#666'>{_html.escape(type_note)}"
        f"{' or null' if nullable else ''}</small></span>",
        layout=widgets.Layout(width="220px"))
    error = widgets.HTML("", layout=widgets.Layout(width="auto"))
    parts = [label, box] + ([include] if include is not None else []) + [error]
    row = widgets.HBox(parts)
    row.add_class("toolbench-field")
    row.add_class(css_class("toolbench-field-", name))
    return Field(name, kind, required, nullable, sub, box, error, include, row, options)


def _item_bounds(sub: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """A multi-select's ``minItems`` (when above 0) and ``maxItems``, when they are integers."""
    low, high = sub.get("minItems"), sub.get("maxItems")
    low = low if isinstance(low, int) and not isinstance(low, bool) and low > 0 else None
    high = high if isinstance(high, int) and not isinstance(high, bool) else None
    return low, high


def _multi_hint(sub: Mapping[str, Any], required: bool) -> str:
    """A multi-select's note: how many to pick, and how to pick several."""
    low, high = _item_bounds(sub)
    many = (f"{low}–{high}" if low is not None and high is not None and low != high
            else str(low) if low is not None and low == high
            else f"at least {low}" if low is not None
            else f"up to {high}" if high is not None else "any")
    return (f"pick {many} (Ctrl/⌘-click for several)"
            + ("" if required else "; none: not sent"))


def _number_text(value: float) -> str:
    return str(value) if not isinstance(value, float) or not value.is_integer() \
        else str(int(value)) if abs(value) < 1e15 else repr(value)


def _number_hint(kind: str, sub: Mapping[str, Any], required: bool) -> str:
    """The placeholder of an empty number box: its kind and range, and whether empty is sent."""
    low, high = sub.get("minimum"), sub.get("maximum")
    low_x, high_x = sub.get("exclusiveMinimum"), sub.get("exclusiveMaximum")
    parts = [kind]
    for bound, sign in ((low, "≥"), (low_x, ">"), (high, "≤"), (high_x, "<")):
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            parts.append(f"{sign} {_html.shorten(str(bound), 20)}")
    return ", ".join(parts) + ("" if required else " (empty: not sent)")

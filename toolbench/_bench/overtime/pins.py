"""The pins file: what each server's items looked like when they were trusted.

``{"count": n, "pins": {server: {kind: {name: {"fingerprint", "item", "pinned"}}}},
"version": 1}``, one pin a line. ``item`` is the whole declared item (see
``toolbench._bench.overtime.snapshots``), so a change found after a restart can be shown
field by field, not only as a different hash.

**Only yours** (ssh's StrictModes). A pins file that its group or others may write, or that
another user owns, is refused, and so is one in a folder where someone else could replace it
(others may write there, without the sticky bit ``/tmp`` has): pins are worth nothing if
someone else can write them. The error names the file, its mode and its owner. The bench
writes the file 0600.

**Safe to share and to lose power over.** Writes are atomic (a temporary file in the same
folder, fsync, ``os.replace``). Only a regular file is read or replaced: a symlink, FIFO or
device is refused, as is a file over its cap, a ``version`` newer than this toolbench's, and
text that is not the format above. Every refusal is a ``ValueError`` that names the file and
the rule (a number too long for Python, a name of 100 kB, ... included).

**What the bench writes, it reads back.** One pin takes at most ``MAX_PIN_BYTES`` in the file:
an item whose fields would make it larger is pinned by its fingerprint alone (``item`` left
out, ``item_bytes`` says how large it was; a later change to it is still refused, and shown
without the old fields). The file begins with its ``count`` of pins, and the cap it is read
with is ``read_cap(count)``: ``MAX_PINS_BYTES`` (for a file made by hand, without a count)
plus ``MAX_PIN_BYTES`` a pin. A write checks the text against that same cap before it
replaces the file, so a file the bench wrote is never refused for its size, whatever
``max_tools`` let into it. (The count is the file's own word; StrictModes makes it yours.)

**Two benches never overwrite each other.** A write takes an exclusive lock on
``<file>.lock`` (``fcntl.flock``, bounded wait), reads the file again, applies only its own
changes (entries set or removed), and replaces it. A pin is set only over the version this
``PinFile`` knew (read, or wrote itself) or over nothing: when another bench pinned the item
meanwhile with another fingerprint, the file keeps that pin, ``save`` returns it as a
conflict, and ``pins`` takes it (the first pin wins; the caller warns and blocks).

File I/O happens on a worker thread of its own (``save_soon``), never on the shared loop.

**What a changed pin refuses** (``refusal``, ``changed_key``): a call to a changed tool, a
read of a changed resource, a read of a URI that a changed resource template produces, and a
fetch of a changed prompt are ``Refused`` (``did_not_happen``) until ``bench.approve(name)``,
all with one wording. A URI is matched to a template by a linear-time engine (re2), so a
hostile template cannot stall the check.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from toolbench._core.errors import Refused
from toolbench._core.files import (
    NotPrivate,
    NotRegularFile,
    SymlinkRefused,
    TooLarge,
    UnsafeFile,
    check_private,
    check_private_folder,
    read_capped,
    write_atomic,
)
from toolbench._core.ids import ToolId

PINS_VERSION = 1
MAX_PINS_BYTES = 32 * 1024 * 1024
"""The cap of a pins file without a ``count`` (made by hand), and the slack of one with."""
MAX_PIN_BYTES = 64 * 1024
"""The most one pin takes in the file (its line): a larger item is pinned by fingerprint."""
LOCK_WAIT_S = 10.0
Key = tuple[str, str, str]
"""(server, kind, name)."""
_COUNT = re.compile(rb'\A\{\s*"count":\s*([0-9]{1,15})\s*,')
_SHOWN = 60
"""How much of a name from the file an error quotes."""


class PinWarning(UserWarning):
    """A pinned item changed (its calls, reads or fetches are refused until approved), or
    items came or went.

    ``.diff`` holds the change as a diff frame (``tb.diff``'s columns), when there is one.
    """

    def __init__(self, message: str, diff: Any = None) -> None:
        super().__init__(message)
        self.diff = diff


def read_cap(count: int) -> int:
    """The most a pins file that holds ``count`` pins is read with, in bytes."""
    return MAX_PINS_BYTES + count * MAX_PIN_BYTES


def _cap_of(head: bytes) -> int:
    found = _COUNT.match(head)
    return read_cap(int(found.group(1))) if found else MAX_PINS_BYTES


def _refuse(path: str, why: str) -> ValueError:
    return ValueError(f"pins file {path!r} {why}")


def _shown(name: object) -> str:
    text = repr(name)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text):,} characters)"


def _not_private(path: str, exc: NotPrivate) -> ValueError:
    return _refuse(path, f"{exc}; pins that someone else can write protect nothing, so a pins "
                         "file must be yours and writable by you alone, in a folder only you "
                         "can write (ssh's StrictModes rule): chmod go-w it, or move it aside "
                         "to pin afresh")


def _read(path: str) -> dict[Key, dict[str, Any]]:
    """The pins in ``path`` ({} when it does not exist); refuses anything unsafe or malformed."""
    try:
        check_private_folder(path)
        data = read_capped(path, _cap_of, private=True)
    except FileNotFoundError:
        return {}
    except NotPrivate as exc:
        raise _not_private(path, exc) from None
    except SymlinkRefused:
        raise _refuse(path, "is a symbolic link; pins are read from and written to a "
                            "regular file only (give the link's target)") from None
    except NotRegularFile:
        raise _refuse(path, "is not a regular file (a FIFO, device or folder); pins are "
                            "kept in a regular file only") from None
    except TooLarge as exc:
        raise _refuse(path, f"is {exc.size:,} bytes; the most read is {exc.limit:,} (a pins "
                            f"file the bench wrote says how many pins it holds, and is read "
                            f"with up to {MAX_PIN_BYTES:,} bytes a pin)") from None
    except OSError as exc:
        raise _refuse(path, f"cannot be read: {exc.strerror}") from exc
    if not data.strip():
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _refuse(path, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _refuse(path, f"is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                            f"{exc.colno}); fix it or move it aside to pin afresh") from None
    except RecursionError:
        raise _refuse(path, "is nested too deeply to be a pins file") from None
    except ValueError:  # a number longer than Python reads (4,300 digits)
        raise _refuse(path, "holds a number too long to read (more than Python's 4,300 "
                            "digits); it is not a pins file toolbench wrote. Move it aside "
                            "to pin afresh") from None
    return _parse(path, doc)


def _parse(path: str, doc: Any) -> dict[Key, dict[str, Any]]:
    if not isinstance(doc, dict) or "version" not in doc:
        raise _refuse(path, 'is not a pins file: expected an object with "version" and "pins"')
    version = doc["version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _refuse(path, f'has "version": {_shown(version)}; a version is a whole number '
                            ">= 1")
    if version > PINS_VERSION:
        raise _refuse(path, f"was written by a newer toolbench (pins version {_shown(version)}; "
                            f"this toolbench reads up to {PINS_VERSION}); it was left untouched")
    pins = doc.get("pins", {})
    if not isinstance(pins, dict):
        raise _refuse(path, '"pins" must be an object {server: {kind: {name: pin}}}')
    out: dict[Key, dict[str, Any]] = {}
    for server, kinds in pins.items():
        if not isinstance(kinds, dict):
            raise _refuse(path, f'"pins".{_shown(server)} must be an object '
                                '{kind: {name: pin}}')
        for kind, names in kinds.items():
            if not isinstance(names, dict):
                raise _refuse(path, f'"pins".{_shown(server)}.{_shown(kind)} must be an object')
            for name, pin in names.items():
                if not (isinstance(pin, dict) and isinstance(pin.get("fingerprint"), str)):
                    raise _refuse(path, f"the pin of {_shown(server)}/{_shown(kind)}/"
                                        f'{_shown(name)} has no "fingerprint" string')
                out[(server, kind, name)] = pin
    return out


def _line(name: str, pin: Mapping[str, Any]) -> str:
    """One pin as its line of the file; an item that would make it over ``MAX_PIN_BYTES`` is
    left out (``item_bytes`` says how large it was)."""
    def text(value: Any) -> str:
        return json.dumps(value, sort_keys=True, ensure_ascii=True, default=repr)

    line = f"    {text(name)}: {text(dict(pin))}"
    if len(line) > MAX_PIN_BYTES and "item" in pin:
        kept = {k: v for k, v in pin.items() if k != "item"}
        kept["item_bytes"] = len(text(pin["item"]))
        line = f"    {text(name)}: {text(kept)}"
    return line


def _document(path: str, pins: Mapping[Key, Mapping[str, Any]]) -> str:
    """The file's text: sorted, one pin a line; refused when over its own read cap (only a
    pin whose name alone is huge can bring it there)."""
    nested: dict[str, dict[str, dict[str, Mapping[str, Any]]]] = {}
    for (server, kind, name), pin in sorted(pins.items()):
        nested.setdefault(server, {}).setdefault(kind, {})[name] = pin
    lines = [f'{{"count": {len(pins)},', ' "pins": {']
    for s_at, (server, kinds) in enumerate(nested.items()):
        lines.append(f"  {json.dumps(server, ensure_ascii=True)}: {{")
        for k_at, (kind, names) in enumerate(kinds.items()):
            lines.append(f"   {json.dumps(kind, ensure_ascii=True)}: {{")
            entries = [_line(name, pin) for name, pin in names.items()]
            lines.append(",\n".join(entries))
            lines.append("   }" + ("," if k_at < len(kinds) - 1 else ""))
        lines.append("  }" + ("," if s_at < len(nested) - 1 else ""))
    lines.append(" },")
    lines.append(f' "version": {PINS_VERSION}}}')
    text = "\n".join(lines) + "\n"
    cap = read_cap(len(pins))
    if len(text) > cap:
        raise _refuse(path, f"would be {len(text):,} bytes for {len(pins):,} pins, over the "
                            f"{cap:,} it is read back with; it was not written (some pinned "
                            "names are too long to keep)")
    return text


class PinFile:
    """One pins file: read at once, written on a worker thread, merged under a lock.

    ``pins`` is what the bench trusts: the file as read, the caller's own changes, and the
    pins another bench won a conflict with (see :meth:`save`).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        parent = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(parent):
            raise _refuse(self.path, f"cannot be created: the folder {parent!r} does not exist")
        self.pins = _read(self.path)
        self._known = {key: str(pin["fingerprint"]) for key, pin in self.pins.items()}
        """The fingerprint this PinFile saw in the file for each key (read, or written by
        itself): a pin is set only over that, or over nothing."""
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="toolbench-pins")
        self._lock = threading.Lock()

    def save_soon(self, set_: Mapping[Key, Mapping[str, Any]], remove: Iterable[Key] = (),
                  ) -> concurrent.futures.Future[dict[Key, dict[str, Any]]]:
        """Merge these changes into the file on the worker thread; the future holds
        :meth:`save`'s conflicts."""
        changes = {k: dict(v) for k, v in set_.items()}
        gone = list(remove)
        return self._pool.submit(self.save, changes, gone)

    def save(self, set_: Mapping[Key, Mapping[str, Any]], remove: Iterable[Key] = (),
             ) -> dict[Key, dict[str, Any]]:
        """Merge these changes into the file now (any thread but the loop's): lock, re-read,
        apply, replace atomically.

        A pin of ``set_`` is written only where the file holds no pin for its key, the same
        fingerprint, or the one this PinFile last saw there. Otherwise another bench pinned
        the item meanwhile with another fingerprint: the file keeps that pin, ``pins`` takes
        it, and it is returned.

        Returns:
            The conflicts: ``{key: the pin the file holds}`` (empty when every pin was set).

        Raises:
            ValueError: the file is unsafe or malformed (named), its lock stayed taken
                (``TimeoutError``), or the text would be over its read cap.
        """
        conflicts: dict[Key, dict[str, Any]] = {}
        with self._lock, _file_lock(self.path + ".lock"):
            current = _read(self.path)
            for key in remove:
                current.pop(key, None)
                self._known.pop(key, None)
            written: dict[Key, str] = {}
            for key, pin in set_.items():
                there = current.get(key)
                if there is not None and str(there["fingerprint"]) not in (
                        str(pin["fingerprint"]), self._known.get(key)):
                    conflicts[key] = dict(there)
                    continue
                current[key] = dict(pin)
                written[key] = str(pin["fingerprint"])
            _atomic_write(self.path, _document(self.path, current))
            self._known.update(written)
            for key, pin in conflicts.items():
                self._known[key] = str(pin["fingerprint"])
                self.pins[key] = pin
        return conflicts

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def now_text() -> str:
    return datetime.now(UTC).isoformat()


@contextlib.contextmanager
def _file_lock(path: str) -> Any:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the merge still keeps other writers' entries
        yield
        return
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise ValueError(f"pins lock file {path!r} cannot be opened ({exc.strerror}); it must "
                         "be a regular file beside the pins file") from exc
    try:
        try:
            check_private(os.fstat(fd))
        except NotPrivate as exc:  # whoever owns it could hold it for ever
            raise ValueError(f"pins lock file {path!r} {exc}; it must be yours and writable "
                             "by you alone (ssh's StrictModes rule): remove it") from None
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"pins file {path[:-5]!r} stayed locked by another "
                                       f"writer for {LOCK_WAIT_S:g} s") from None
                time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _atomic_write(path: str, text: str) -> None:
    try:
        write_atomic(path, text)
    except UnsafeFile as exc:
        raise _refuse(path, str(exc)) from None


# -- what a changed pin refuses ------------------------------------------------------------
_COMPARED = ("title", "description", "input_schema", "output_schema", "annotations", "uri",
             "mime_type", "arguments", "execution", "ui")
_WHAT = {"tool": "tool", "resource": "resource", "resource_template": "resource template",
         "prompt": "prompt"}
MAX_TEMPLATE_CHARS = 2048
"""A longer URI template is not matched against reads (it refuses nothing by itself)."""
_templates: dict[str, Any] = {}


def refusal(kind: str, shown: str, old: Mapping[str, Any] | None, new: Mapping[str, Any],
            tool: ToolId | None = None, through: str | None = None) -> Refused:
    """The ``Refused`` for a call, read or fetch of a changed pinned item.

    Args:
        kind: the item's kind (``tool``, ``resource``, ``resource_template``, ``prompt``).
        shown: how the item is named in the message (``server/name``).
        old: the pinned item, when the pin holds it (the fields that changed are named).
        new: the item as listed now.
        tool: the tool, for a tool's refusal.
        through: the URI read, when a changed template is what refuses it.
    """
    fields = [f for f in _COMPARED if (old or {}).get(f) != new.get(f)]
    told = f" ({', '.join(fields)})" if old is not None and fields else ""
    via = f"not sent: {through!r} is read through " if through is not None else "not sent: "
    return Refused(f"{via}{_WHAT.get(kind, kind)} {shown} changed since it was pinned{told}; "
                   "bench.approve(name) accepts the new version (bench.pins shows it)",
                   tool=tool)


def template_regex(template: str) -> Any:
    """A re2 regexp that a URI made from the RFC 6570 ``template`` fully matches (None for a
    template too long or too odd to match)."""
    found = _templates.get(template)
    if found is not None or template in _templates:
        return found
    import re

    import re2  # type: ignore[import-untyped]

    compiled: Any = None
    if len(template) <= MAX_TEMPLATE_CHARS:
        parts = []
        for literal, expression in re.findall(r"([^{]*)(\{[^}]*\}|$)", template):
            parts.append(re2.escape(literal))
            if not expression:
                continue
            op = expression[1:2]
            parts.append({"+": ".*", "#": "(#.*)?", "?": "(\\?.*)?", "&": "(&.*)?",
                          "/": "(/[^?#]*)?", ".": "(\\.[^/?#]*)?", ";": "(;[^/?#]*)?",
                          }.get(op, "[^/?#]*"))
        options = re2.Options()
        options.log_errors = False
        options.never_capture = True
        try:
            compiled = re2.compile("".join(parts), options)
        except Exception:  # re2.error, a surrogate: matched by nothing
            compiled = None
    if len(_templates) > 1000:
        _templates.clear()
    _templates[template] = compiled
    return compiled


def changed_key(changes: Mapping[Key, Any], server: str, kind: str, name: str,
                ) -> tuple[Key, str | None] | None:
    """The changed pin that refuses reading ``name`` (kind ``resource``: a URI) or fetching
    it (kind ``prompt``), and the URI read through a template (else None); None: allowed."""
    key = (server, kind, name)
    if key in changes:
        return key, None
    if kind != "resource":
        return None
    for other in changes:
        if (other[0] == server and other[1] == "resource_template"
                and name.startswith(other[2].split("{", 1)[0])):  # the literal head: cheap
            regex = template_regex(other[2])
            if regex is not None and regex.fullmatch(name) is not None:
                return other, name
    return None

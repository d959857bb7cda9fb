"""Hiding a server's secrets in what the bench shows: exceptions, and structured data.

A server's ``Redactor`` (``toolbench._transports.mcp.errors``) knows its secret values (env,
headers, config expansions); these helpers apply it to things that are not plain text.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from toolbench._bench.journal.record import Record
from toolbench._core.errors import ToolError, Unreachable
from toolbench._core.redact import Redactor


def scrubbed(exc: BaseException, redact: Redactor) -> BaseException:
    """``exc`` itself, or (when it or a cause would show a secret) a clean copy, unchained.

    The chain is dropped, not redacted: a cause is some library's exception, and a
    traceback prints it verbatim.
    """
    if not isinstance(exc, Exception) or redact.cause(exc) is not None:
        return exc
    clean: Exception
    if isinstance(exc, ToolError):
        clean = type(exc)(redact(exc.detail), tool=exc.tool)
    else:
        text = redact(str(exc))
        try:
            clean = type(exc)(text)
            if str(clean) != text:
                raise TypeError
        except Exception:
            clean = ValueError(f"{type(exc).__name__}: {text}")
    clean.__suppress_context__ = True
    return clean


def doctor_hint(name: str) -> str:
    return f" (run bench.doctor({name!r}) to see which step failed)"


def hinted(exc: BaseException, name: str) -> BaseException:
    """A failed connect's ``Unreachable``, saying how to see which step failed (the doctor:
    ``toolbench._bench.doctor``); changed in place, once. Anything else as it is."""
    hint = doctor_hint(name)
    if isinstance(exc, Unreachable) and not exc.detail.endswith(hint):
        exc.detail += hint
        exc.args = (exc.detail,)
    return exc


def redacted_data(data: Any, redact: Redactor) -> Any:
    """A log entry's ``data`` with a server's secrets hidden (JSON through its text)."""
    if data is None or not redact.active:
        return data
    if isinstance(data, str):
        return redact(data)
    try:
        text = json.dumps(data, default=str)
    except (TypeError, ValueError, RecursionError):
        return redact(repr(data))
    shown = redact(text)
    if shown == text:
        return data
    try:
        return json.loads(shown)
    except ValueError:
        return shown


def redacted_failure(record: Record, redact: Redactor) -> Record:
    """A failed call's record with the server's secrets hidden in what the server (or an
    error about it) said: ``error``, ``text`` and ``content``. A success is kept as sent
    (a tool's own result is the server's data)."""
    if record.ok:
        return record
    return dataclasses.replace(
        record, error=None if record.error is None else redact(record.error),
        text=None if record.text is None else redact(record.text),
        content=redacted_data(record.content, redact))

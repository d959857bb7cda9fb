"""A diagnosis: the steps of one connection, each with its outcome, its time and its evidence.

What a step shows came partly from the server (a log line, a server name, an error text):
it is capped, passed through the server's ``Redactor`` (its env and header values, its
config's expansions) and escaped in HTML. Display never raises and always has text/plain.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from toolbench._core import html as _html

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
_MARK = {OK: "✔", WARN: "!", FAIL: "✘", SKIP: "-"}
_COLOUR = {OK: "#1b5e20", WARN: "#8a6d00", FAIL: "#b00020", SKIP: "#666"}
EVIDENCE_CHARS = 400


@dataclass
class Step:
    """One step: what was tried, how it went, how long it took, what was seen."""

    name: str
    status: str
    seconds: float
    evidence: str


@dataclass
class Diagnosis:
    """Every step tried on one server, in order; the first failure ends the walk."""

    server: str
    transport: str
    target: str
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no step failed."""
        return all(step.status != FAIL for step in self.steps)

    @property
    def failed(self) -> Step | None:
        """The step that failed, if one did."""
        return next((step for step in self.steps if step.status == FAIL), None)

    def lines(self) -> list[str]:
        """One line a step, as a terminal shows them."""
        width = max((len(step.name) for step in self.steps), default=0)
        return [f"{_MARK[s.status]} {s.name.ljust(width)}  {s.seconds * 1000:7.0f} ms  "
                f"{s.evidence}" for s in self.steps]

    def __str__(self) -> str:
        verdict = ("every step passed" if self.ok else
                   f"failed at: {self.failed.name}" if self.failed else "")
        head = f"doctor {self.server!r} ({self.transport}: {self.target}): {verdict}"
        return "\n".join([head, *self.lines()])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        try:
            rows = "".join(
                f"<li style='list-style:none'><b style='color:{_COLOUR[s.status]}'>"
                f"{_MARK[s.status]}</b> <b>{_html.escape(s.name)}</b> "
                f"<small>({s.seconds * 1000:.0f} ms)</small><br><span style='margin-left:1.4em;"
                f"font-family:monospace;font-size:90%'>{_html.escape(s.evidence)}</span></li>"
                for s in self.steps)
            verdict = ("every step passed" if self.ok else
                       f"failed at <b>{_html.escape(self.failed.name)}</b>" if self.failed
                       else "")
            return (f"<div class='toolbench-doctor'><div>doctor "
                    f"<b>{_html.escape(self.server)}</b> ({_html.escape(self.transport)}: "
                    f"<code>{_html.escape(self.target)}</code>): {verdict}</div>"
                    f"<ul style='padding-left:0.5em'>{rows}</ul></div>")
        except Exception:  # a display never raises
            return f"<pre>{_html.escape(str(self))}</pre>"


class Recorder:
    """Adds steps to a diagnosis, timing each and hiding the server's secrets."""

    def __init__(self, diagnosis: Diagnosis, redact: Callable[[str], str]) -> None:
        self.diagnosis = diagnosis
        self.redact = redact

    def add(self, name: str, status: str, evidence: str, seconds: float = 0.0) -> Step:
        text = _html.shorten(" ".join(self.redact(evidence).split()), EVIDENCE_CHARS)
        step = Step(name, status, seconds, text)
        self.diagnosis.steps.append(step)
        return step

    @contextmanager
    def timed(self) -> Iterator[Callable[[], float]]:
        """``with rec.timed() as elapsed:`` ... ``elapsed()`` is the seconds so far."""
        start = time.perf_counter()
        yield lambda: time.perf_counter() - start


def shown(value: Any, limit: int = 120) -> str:
    """Something a server sent, as evidence: its repr, capped."""
    return _html.shorten(repr(value), limit)

"""An eval's journal: each finished row appended to a file before the eval hands it back.

Why: an eval of thousands of cases against a paid model takes hours and costs money. A kernel
that dies at row 1,500 must not ask the model those 1,500 questions again. ``evaluate(...,
journal="eval.jsonl", resume=True)`` reads the rows a killed eval finished and asks only for
the rest, as ``map(resume=True)`` skips the calls its journal holds.

How, and why not the bench's SQLite journal: a step-1 eval row is not a call (nothing is sent
to a server), and the bench's journal holds calls. A row is appended to a plain file opened
with ``O_APPEND``, one JSON line, one ``write(2)``: the kernel holds the bytes from then on, so
a process killed an instant later keeps the row (the same promise as the journal's intent log
and SQLite's WAL with ``synchronous=NORMAL``; only a power cut could drop the last lines). A
row costs a few microseconds on the loop and needs no writer thread. Tool calls that a
``steps>1`` row makes are recorded in the bench's own journal as any call is; a ``steps>1``
row that was in flight when the process died is run again whole on resume (its model asked
again, its tools called again): only finished rows are kept.

What is found on reopening: the first line names the format, so a file that is not an eval
journal (the bench's SQLite journal, a cases file) is refused and left untouched. A line cut
short by a kill is skipped with one warning that counts it, and the next row starts on a line
of its own. A row is found by its key: the eval's fingerprint (the model's name and
``steps``), the case's id and a digest of its content (an edited case is asked again), the
server and the repeat. The last line for a key wins.

What a failing disk costs: nothing but durability. A row that cannot be written stays in the
eval's result; the eval warns once (``JournalWarning``) how many rows are not in the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from toolbench._bench.journal.intent_log import json_encoder
from toolbench._bench.journal.journal import JournalWarning

HEADER = {"toolbench": "eval journal", "format": 1}
MAX_READ_BYTES = 1 << 30
"""The most of a journal that is read on resuming (a million rows is about 600 MB)."""
_encode = json_encoder(ascii_only=True)

Key = tuple[str, str, str, str, int]
"""(eval fingerprint, case id, case digest, server, repeat)."""


class EvalJournal:
    """One eval journal file, open for appending; the rows it held when opened.

    Opening reads the file (do it off the loop: it may be large). ``rows`` is filled only
    when ``load=True``, so an eval that does not resume holds nothing of earlier ones.
    """

    def __init__(self, path: str | os.PathLike[str], *, load: bool) -> None:
        self.path = os.fspath(path)
        self.rows: dict[Key, dict[str, Any]] = {}
        self.unwritten = 0
        self.damaged = 0
        """Lines that could not be read (a row cut short by a kill); :meth:`warn_damaged`."""
        self.problem: str | None = None
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            self._fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            raise ValueError(f"eval journal {self.path!r} cannot be opened: {exc}") from exc
        try:
            self._open(load)
        except OSError as exc:  # reading it, or writing its header (a full disk)
            os.close(self._fd)
            raise ValueError(f"eval journal {self.path!r} cannot be used: {exc}") from exc
        except BaseException:
            os.close(self._fd)
            raise

    def _open(self, load: bool) -> None:
        size = os.fstat(self._fd).st_size
        if size == 0:
            self._append(_encode(HEADER) + "\n")
            return
        with os.fdopen(os.dup(self._fd), "rb") as file:
            first = file.readline(4096)
            if not _is_header(first):
                hint = (" (it is a SQLite file: the bench's journal is Bench(journal=...); an "
                        "eval's journal= is a file of its own, e.g. 'eval.jsonl')"
                        if first.startswith(b"SQLite format 3") else "")
                raise ValueError(f"{self.path!r} is not a toolbench eval journal{hint}; it "
                                 "is left untouched")
            damaged = 0
            if load:
                damaged = self._read(file)
            file.seek(max(0, size - 1))
            ends_cleanly = file.read(1) == b"\n"
        if not ends_cleanly:  # a kill cut the last line: the next row starts afresh
            self._append("\n")
        self.damaged = damaged

    def _read(self, file: Any) -> int:
        damaged = 0
        budget = MAX_READ_BYTES
        for line in file:
            budget -= len(line)
            if budget < 0:
                raise ValueError(f"eval journal {self.path!r} is over {MAX_READ_BYTES:,} "
                                 "bytes; start a new one")
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = entry["key"]
                row = entry["row"]
                if not (isinstance(key, list) and len(key) == 5 and isinstance(row, dict)):
                    raise ValueError("not a row")
                self.rows[(str(key[0]), str(key[1]), str(key[2]), str(key[3]),
                           int(key[4]))] = row
            except (ValueError, KeyError, TypeError):
                damaged += 1
        return damaged

    def finished(self, key: Key) -> dict[str, Any] | None:
        """The row kept for ``key``, if it finished without a model error."""
        row = self.rows.get(key)
        if row is None or row.get("error") is not None:
            return None  # a failed ask (a timeout, a 429) is asked again, as map retries
        return row

    def write(self, key: Key, row: Mapping[str, Any]) -> None:
        """Append one row; a failure is counted, never raised (the row stays in memory)."""
        try:
            line = _encode({"key": list(key), "row": dict(row)}) + "\n"
            self._append(line)
        except (OSError, ValueError, TypeError, RecursionError) as exc:
            self.unwritten += 1
            self.problem = self.problem or f"{type(exc).__name__}: {exc}"

    def _append(self, line: str) -> None:
        data = line.encode("ascii")
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def warn_damaged(self) -> None:
        """The one warning for lines that could not be read (issued by the eval, not by the
        thread that opened the file)."""
        if self.damaged:
            warnings.warn(f"eval journal {self.path!r}: skipped {self.damaged} damaged "
                          f"line{'s' * (self.damaged != 1)} (a row cut short by a kill is "
                          "asked again)", JournalWarning, stacklevel=4)

    def warn_unwritten(self, total: int) -> None:
        """The one warning an eval gives when some of its rows are not in the file."""
        if self.unwritten:
            warnings.warn(f"eval journal {self.path!r}: {self.unwritten} of {total} rows "
                          f"could not be written ({self.problem}); they are in the result "
                          "only, and a resumed eval would ask for them again",
                          JournalWarning, stacklevel=4)


def _is_header(line: bytes) -> bool:
    try:
        found = json.loads(line)
    except ValueError:
        return False
    return isinstance(found, dict) and found.get("toolbench") == HEADER["toolbench"]


def key_of(fingerprint: str, case_id: str, digest: str, server: str, repeat: int) -> Key:
    return (fingerprint, case_id, digest, server, repeat)


def fingerprint(model_name: str, steps: int, extra: Sequence[str] = ()) -> str:
    """What makes two evals' rows interchangeable: the same model and the same ``steps``."""
    return "|".join([model_name, f"steps={steps}", *extra])

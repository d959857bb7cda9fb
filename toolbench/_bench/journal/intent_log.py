"""One journal session's intents, appended to a plain file before each call is sent.

Why a file beside the SQLite journal: committing every intent to SQLite before sending made
a single journaled call wait for a hand-off to the writer thread, a transaction and a wake-up
(about 200 µs here, against a goal of 60). Copying a line into this file, mapped into
memory (``IntentLog``), costs about a microsecond on the event loop and survives the process
being killed: the kernel holds the bytes, which is the same promise as SQLite's WAL with
``synchronous=NORMAL`` (only a power cut could drop the last ones).

The writer thread still commits intents and outcomes to SQLite, in groups. Once everything in
the file is in SQLite the file is emptied (past a size), so it stays small; a clean close
removes it. Reopening a journal reads the files of sessions whose process is gone: an intent
there with no row in SQLite is a call that was in flight, and becomes an ``in_doubt`` record.

A file is one session's: its first line names the process (pid and start time), so a
recycled pid is not taken for the live writer. Lines are JSON arrays; a torn last line (a
full disk, a kill in the middle of a copy) is skipped, never fatal, and the file's allocated,
unwritten end (NUL bytes) is not read.
"""

from __future__ import annotations

import contextlib
import glob
import json
import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from toolbench._core.files import UnsafeFile, read_head

SUFFIX = "-intents-"
"""A session's file is ``<journal path>-intents-<session>``."""
FIRST_BYTES = 1 << 16
"""How much of the file is allocated (and mapped) at first."""
GROW_MAX_BYTES = 1 << 20
"""The file's allocation doubles as it fills, by at most this much at a time."""
COMPACT_BYTES = 1 << 20
"""Past this size, the file is emptied as soon as all it holds is committed to SQLite."""
MAX_READ_BYTES = 64 << 20
"""The most of a dead session's file that is read on reopening; the rest counts as damaged."""
_HEADER_KEY = "toolbench_intents"
_FORMAT = 1


def json_encoder(ascii_only: bool) -> Callable[[Any], str]:
    """``json.dumps(value, default=str, ensure_ascii=ascii_only)``, without JSONEncoder's
    per-call setup (a third of an intent line's cost, and of a journaled map's writer time).
    A cycle raises ``RecursionError`` (no circular check: the callers catch it)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(ensure_ascii=ascii_only, default=str).encode
    escape = (json.encoder.encode_basestring_ascii if ascii_only
              else json.encoder.encode_basestring)
    encoder = make(None, str, escape, None, ": ", ", ", False, False, True)

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0))

    return encode


_encode = json_encoder(ascii_only=True)


def proc_tag(pid: int) -> str | None:
    """The process's start time (Linux), so a recycled pid is not taken for the live process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    if len(fields) > 19 and fields[0] != b"Z":
        return fields[19].decode()
    return None


def process_alive(pid: int, tag: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists, owned by someone else
    current = proc_tag(pid)
    if tag is not None and current is None:
        return not os.path.exists("/proc/self/stat")  # a zombie reads as gone on Linux
    return tag is None or current == tag


class IntentLog:
    """The live session's file: only the event loop's thread appends (under the journal's
    lock); the journal decides when it may be emptied.

    The file is mapped into memory and an intent is copied into the map: no system call,
    so the loop keeps the GIL (issue 46). A ``write(2)`` per intent let the GIL go once per
    call, and every thread waiting for it (the journal's writer, a cell blocked on a map)
    was woken for nothing each time: a journaled map made a context switch per call and
    spent 25-45 µs more CPU a call on it. The promise is the same as a ``write(2)``'s: the bytes are
    in the kernel's page cache once copied, so they survive the process being killed. The
    file is allocated ahead (``posix_fallocate``), so a full disk is an error here, never a
    SIGBUS in the middle of a copy; what is allocated and not yet written reads as NUL
    bytes, which :func:`dead_logs` ignores. Where the file cannot be mapped, each line is
    one ``write(2)``, as before.
    """

    def __init__(self, journal_path: str, session: str, pid: int, proc: str | None) -> None:
        self.path = f"{journal_path}{SUFFIX}{session}"
        header = _encode({_HEADER_KEY: _FORMAT, "pid": pid, "proc": proc,
                          "session": session}).encode() + b"\n"
        # A new file, ours alone: never one that is there (a planted link or FIFO).
        self._fd: int | None = os.open(
            self.path,
            os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        self._header = len(header)
        self.size = 0
        self._map: mmap.mmap | None = None
        self._capacity = 0
        if hasattr(os, "posix_fallocate"):  # not on macOS: unallocated, a full disk is a SIGBUS
            with contextlib.suppress(OSError, ValueError):
                self._map_from(self._fd, 0, FIRST_BYTES)
        self._mapped = self._map is not None  # else one write(2) a line, for good
        if not self.append(header):
            raise OSError(f"could not write {self.path!r}")

    def _map_from(self, fd: int, used: int, capacity: int) -> mmap.mmap:
        """Allocate the file up to ``capacity`` and map all of it (``used`` bytes are kept)."""
        old, self._map = self._map, None
        if old is not None:
            old.close()
        os.posix_fallocate(fd, used, capacity - used)
        mapped = self._map = mmap.mmap(fd, capacity, flags=mmap.MAP_SHARED,
                                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self._capacity = capacity
        return mapped

    def append(self, line: bytes) -> bool:
        """Copy one line into the file; False (and the file is given up) if it cannot all
        land (a full disk: the space is allocated before the copy). The writer thread may
        close the file meanwhile: what this finds closed fails as a full disk would."""
        fd, mapped = self._fd, self._map
        if fd is None:
            return False
        end = self.size + len(line)
        try:
            if not self._mapped:  # a file that cannot be mapped: one write(2)
                if os.write(fd, line) != len(line):
                    raise OSError("a short write")
            else:
                if mapped is None:
                    raise ValueError("closed")
                if end > self._capacity:
                    mapped = self._map_from(fd, self.size, max(
                        end, self._capacity + min(self._capacity, GROW_MAX_BYTES)))
                mapped[self.size:end] = line
        except (OSError, ValueError):  # ValueError: a map closed meanwhile
            self.close()  # a torn line is skipped on reading; nothing more is appended
            return False
        self.size = end
        return True

    def unlinked(self) -> bool:
        """Whether the file was deleted while open (what is appended would go nowhere)."""
        fd = self._fd
        try:
            return fd is not None and os.fstat(fd).st_nlink == 0
        except OSError:
            return True

    def empty(self) -> None:
        """Drop every intent (the caller knows all of them are committed to SQLite)."""
        fd, mapped = self._fd, self._map
        if fd is None:
            return
        try:
            if not self._mapped:
                os.ftruncate(fd, self._header)
                os.lseek(fd, self._header, os.SEEK_SET)
            else:  # unmapped first: a page past the end of a mapped file is a SIGBUS
                self._map = None
                if mapped is not None:
                    mapped.close()
                os.ftruncate(fd, self._header)  # the old lines read as nothing
                self._map_from(fd, self._header, FIRST_BYTES)
            self.size = self._header
        except (OSError, ValueError):
            self.close()

    def close(self, remove: bool = False) -> None:
        mapped, self._map = self._map, None
        if mapped is not None:
            with contextlib.suppress(BufferError, ValueError):
                mapped.close()
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        if remove:
            with contextlib.suppress(OSError):
                os.unlink(self.path)


def intent_line(call_id: str, batch: str | None, started: datetime, server: str, tool: str,
                name: str, arguments: Any, provenance: Any) -> bytes:
    """The file's line for one intent: one JSON array in ASCII (a lone surrogate is escaped).

    The start is a POSIX timestamp: cheaper to write than ISO text, and exact to the µs.
    """
    try:
        text = _encode([call_id, batch, started.timestamp(), server, tool, name, arguments,
                        provenance])
    except (ValueError, TypeError, RecursionError):  # a cycle, or a value JSON cannot hold
        text = _encode([call_id, batch, started.timestamp(), server, tool, name,
                        _plain(arguments), _plain(provenance)])
    return text.encode("ascii") + b"\n"


OUTCOME = "outcome"
"""The first value of an outcome line: ``[OUTCOME, call_id, ...the record's columns]``."""


def outcome_line(record: Any) -> bytes:
    """The file's line for one finished call: its whole record, one JSON array in ASCII.

    Written before the call returns, so the answer survives a kill -9 an instant later; the
    start is a POSIX timestamp (as in an intent line), JSON columns are nested values.
    """
    r = record
    head = [OUTCOME, r.call_id, r.batch, r.started.timestamp(), r.server, r.tool, r.name]
    tail = [int(r.ok), r.disposition, r.error_type, r.error, r.latency_ms, r.text]
    try:
        text = _encode([*head, r.arguments, *tail, r.structured, r.content, r.provenance,
                        r.kind, r.attempts, r.queued_ms])
    except (ValueError, TypeError, RecursionError):
        text = _encode([*head, _plain(r.arguments), *tail, _plain(r.structured),
                        _plain(r.content), _plain(r.provenance), r.kind, r.attempts,
                        r.queued_ms])
    return text.encode("ascii") + b"\n"


def _plain(value: Any) -> Any:
    try:
        return json.loads(_encode(value))
    except (ValueError, TypeError, RecursionError):
        return {"_unencodable": repr(value)[:2000]}


def started_text(value: Any) -> str:
    """An intent line's start, as the ISO text a record is read from."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("the start is not a timestamp")
    return datetime.fromtimestamp(value, UTC).isoformat()


@dataclass(frozen=True, slots=True)
class DeadLog:
    """The file of a session whose process is gone, and the intents it held."""

    path: str
    pid: int
    rows: list[tuple[Any, ...]]  # (call_id, batch, timestamp, server, tool, name, args, prov)
    damaged: int
    outcomes: list[tuple[Any, ...]] = field(default_factory=list)
    """Finished calls: the record's 17 columns (start as a timestamp, JSON as values)."""


def _read_lines(path: str) -> tuple[list[bytes], int] | None:
    """A regular file's pieces split at newlines (the last one empty or torn), at most
    MAX_READ_BYTES of it, and 1 if there was more (left unread and counted as damaged);
    ``None`` for anything that is not a regular file (a FIFO, a device, a link) or that
    cannot be read."""
    try:
        data, more = read_head(path, MAX_READ_BYTES)
    except (OSError, UnsafeFile):
        return None
    # A live file is allocated ahead: its unwritten end reads as NUL bytes.
    return data.rstrip(b"\0").split(b"\n"), int(more)


def dead_logs(journal_path: str, live_sessions: Sequence[str] | set[str]) -> list[DeadLog]:
    """Read (never write) the files of this journal whose session is not running."""
    found: list[DeadLog] = []
    me = os.getpid()
    for path in sorted(glob.glob(glob.escape(journal_path) + SUFFIX + "*")):
        read = _read_lines(path)
        if read is None:
            continue
        lines, cut = read
        try:
            header = json.loads(lines[0])
            pid, proc, session = header["pid"], header["proc"], header["session"]
            if (header[_HEADER_KEY] != _FORMAT or not isinstance(pid, int)
                    or isinstance(pid, bool) or not 0 < pid < 1 << 31
                    or not isinstance(session, str)):
                continue
        except (ValueError, KeyError, TypeError, IndexError):
            continue  # not ours, or a header torn by a full disk: nothing was appended
        if session in live_sessions:
            continue
        if pid != me and process_alive(pid, proc if isinstance(proc, str) else None):
            continue
        rows: list[tuple[Any, ...]] = []
        outcomes: list[tuple[Any, ...]] = []
        damaged = 0
        for line in lines[1:-1]:  # the last piece is empty, or a line torn by a full disk
            try:
                row = json.loads(line)
                # 18 values before retries and rates (schema 3), 20 since
                if isinstance(row, list) and len(row) in (18, 20) and row[0] == OUTCOME:
                    outcomes.append(tuple(row[1:]))
                    continue
                if not isinstance(row, list) or len(row) != 8:
                    raise ValueError("not an intent")
                rows.append(tuple(row))
            except (ValueError, RecursionError):
                damaged += 1
        found.append(DeadLog(path, pid, rows, damaged + cut, outcomes))
    return found

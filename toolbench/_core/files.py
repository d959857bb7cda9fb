"""Files toolbench keeps for itself: read bounded, replaced whole, never through a link.

Config files, pins, token records and dead sessions' intent logs are read with the same
care: a FIFO or a device would hang the open or never end, ``/dev/zero`` or a huge file
would exhaust memory, and a symbolic link could point a read or a write somewhere else. So:

- :func:`read_head` / :func:`read_capped` open with ``O_NONBLOCK`` (the open of a FIFO never
  waits), ``O_NOFOLLOW`` unless the caller decides links are fine, read only a regular file
  (checked on the open descriptor, so nothing can swap it in between) and at most a cap.
- :func:`write_atomic` writes a temporary file beside the target (``O_EXCL``, ``O_NOFOLLOW``,
  mode 0600), fsyncs it, ``os.replace``\\ s the target, and refuses a target that is a link
  or not a regular file; a reader sees the old content or the new, never a torn one.

The refusals are :class:`UnsafeFile` (a ``ValueError``) subclasses, so each caller words its
own error ("pins file ... is a symbolic link") and maps them to its own type.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile


class UnsafeFile(ValueError):
    """A file toolbench will not read or replace; ``str()`` says why (after "<file> ")."""


class SymlinkRefused(UnsafeFile):
    """The path is a symbolic link (and the caller did not accept links)."""


class NotRegularFile(UnsafeFile):
    """The path is a FIFO, a device, a socket or a folder."""


class TooLarge(UnsafeFile):
    """The file holds more than the cap; ``size`` is at least ``limit + 1``."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"is {size:,} bytes, over the {limit:,}-byte cap")
        self.size = size
        self.limit = limit


def _open_regular(path: str | os.PathLike[str], follow_links: bool) -> int:
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
             | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0)))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if not follow_links and (exc.errno in (errno.ELOOP, errno.EMLINK)
                                 or os.path.islink(path)):
            raise SymlinkRefused("is a symbolic link") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile("is not a regular file (a FIFO, device or folder)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_head(path: str | os.PathLike[str], limit: int, *,
              follow_links: bool = False) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of a regular file, and whether there was more.

    Raises ``FileNotFoundError`` when it is missing, :class:`SymlinkRefused` for a link
    (unless ``follow_links``), :class:`NotRegularFile`, and ``OSError`` for the rest.
    """
    fd = _open_regular(path, follow_links)
    with os.fdopen(fd, "rb") as file:
        data = file.read(limit)
        more = bool(file.read(1))
    return data, more


def read_capped(path: str | os.PathLike[str], limit: int, *,
                follow_links: bool = False) -> bytes:
    """A regular file's bytes, refused whole (:class:`TooLarge`) when over ``limit``.

    Raises as :func:`read_head` does; a file whose size already says it is too large is
    refused before a byte is read.
    """
    fd = _open_regular(path, follow_links)
    with os.fdopen(fd, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size > limit:
            raise TooLarge(size, limit)
        data = file.read(limit + 1)
    if len(data) > limit:  # it grew since
        raise TooLarge(len(data), limit)
    return data


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *,
                 mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` whole (UTF-8 if text), as a file of ``mode`` (0600).

    Refuses (:class:`SymlinkRefused`, :class:`NotRegularFile`) a target that is a link or not
    a regular file: it is never written through nor replaced. The folder must exist.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            raise SymlinkRefused("is a symbolic link; it is not replaced")
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile("is not a regular file (a FIFO, device or folder); "
                                 "it is not replaced")
    target = os.path.abspath(path)
    folder, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)  # O_EXCL, 0600
    try:
        with os.fdopen(fd, "wb") as file:
            if mode != 0o600:
                os.fchmod(file.fileno(), mode)
            file.write(raw)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

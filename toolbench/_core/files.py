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

- :func:`check_private` (``read_capped(..., private=True)``) is ssh's StrictModes: a file that
  someone else could have written (its group or others may write it, or another user owns it)
  is refused, and so is a file in a folder where someone else could replace it.

The refusals are :class:`UnsafeFile` (a ``ValueError``) subclasses, so each caller words its
own error ("pins file ... is a symbolic link") and maps them to its own type.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable

HEAD_BYTES = 256
"""How much of a file ``read_capped`` reads before a cap given as a function decides."""


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


class NotPrivate(UnsafeFile):
    """Someone but its owner could have written the file (ssh's StrictModes): its group or
    others may write it, another user owns it, or it is in a folder others can write.
    ``str()`` names the mode and the owner."""

    def __init__(self, why: str, mode: int, uid: int) -> None:
        super().__init__(f"{why} (mode {stat.S_IMODE(mode):04o}, owner {owner_name(uid)})")
        self.mode = mode
        self.uid = uid


def owner_name(uid: int) -> str:
    """``alice (uid 1000)``, or ``uid 4242`` for a uid without a name."""
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _trusted_owner(uid: int) -> bool:
    """You or root (who can do anything anyway), as ssh's StrictModes allows."""
    return uid in (os.geteuid(), 0)


def _private_group(gid: int) -> bool:
    """Your user-private group (named as you, your primary group, no other member listed), as
    Debian's ``umask 002`` relies on: its being able to write gives no one else anything."""
    try:
        import grp
        import pwd

        me = pwd.getpwuid(os.geteuid())
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return (me.pw_gid == gid and group.gr_name == me.pw_name
            and set(group.gr_mem) <= {me.pw_name})


def check_private(info: os.stat_result) -> None:
    """Refuse (:class:`NotPrivate`) a file that its group or others may write, or that another
    user owns. Nothing is checked where there are no owners (Windows)."""
    if not hasattr(os, "geteuid"):
        return
    loose = info.st_mode & 0o022
    if loose:
        who = ("its group and others" if loose == 0o022 else
               "its group" if loose & 0o020 else "others")
        raise NotPrivate(f"can be written by {who}", info.st_mode, info.st_uid)
    if not _trusted_owner(info.st_uid):
        raise NotPrivate("is owned by another user", info.st_mode, info.st_uid)


def check_private_folder(path: str | os.PathLike[str]) -> None:
    """Refuse (:class:`NotPrivate`) when the folder holding ``path`` lets someone else replace
    it: owned by another user, or writable by others (or by a group with others in it) without
    the sticky bit that keeps them from renaming what they do not own (as ``/tmp`` has)."""
    if not hasattr(os, "geteuid"):
        return
    folder = os.path.dirname(os.path.abspath(path))
    info = os.stat(folder)
    if not _trusted_owner(info.st_uid):
        raise NotPrivate(f"is in a folder owned by another user ({folder!r})", info.st_mode,
                         info.st_uid)
    if info.st_mode & stat.S_ISVTX:
        return
    if info.st_mode & 0o002 or (info.st_mode & 0o020 and not _private_group(info.st_gid)):
        raise NotPrivate(f"is in a folder that others can write ({folder!r}), so they could "
                         "replace it", info.st_mode, info.st_uid)


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


def read_capped(path: str | os.PathLike[str], limit: int | Callable[[bytes], int], *,
                follow_links: bool = False, private: bool = False) -> bytes:
    """A regular file's bytes, refused whole (:class:`TooLarge`) when over ``limit``.

    ``limit`` may be a function of the file's first ``HEAD_BYTES`` (a file that says how much
    it holds). With ``private``, a file that someone else could have written is refused
    (:func:`check_private`, on the open descriptor).

    Raises as :func:`read_head` does; a file whose size already says it is too large is
    refused before more than its head is read.
    """
    fd = _open_regular(path, follow_links)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if private:
            check_private(info)
        head = b""
        if callable(limit):
            head = file.read(HEAD_BYTES)
            limit = limit(head)
        if info.st_size > limit:
            raise TooLarge(info.st_size, limit)
        data = head + file.read(max(0, limit + 1 - len(head)))
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

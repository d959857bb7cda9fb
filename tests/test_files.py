"""toolbench._core.files: bounded reads of regular files and whole, 0600, link-proof writes."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolbench._core import files
from toolbench._core.files import (
    NotRegularFile,
    SymlinkRefused,
    TooLarge,
    UnsafeFile,
    read_capped,
    read_head,
    write_atomic,
)


def _bounded(fn: Callable[[], Any], seconds: float = 10.0) -> Any:
    """Run ``fn`` on a thread; fail (not hang) if it has not finished in ``seconds``."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the call hung"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_a_regular_file_is_read_whole_under_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b"x" * 100)
    assert read_capped(path, 100) == b"x" * 100
    assert read_head(path, 100) == (b"x" * 100, False)
    assert read_head(path, 40) == (b"x" * 40, True)


def test_over_the_cap_is_refused_naming_the_size(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    with pytest.raises(TooLarge, match="is 101 bytes, over the 100-byte cap") as caught:
        read_capped(path, 100)
    assert (caught.value.size, caught.value.limit) == (101, 100)
    assert isinstance(caught.value, UnsafeFile | ValueError)


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_capped(tmp_path / "nope", 10)


def test_a_link_is_refused_unless_the_caller_follows_links(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"secret")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(SymlinkRefused, match="symbolic link"):
        read_capped(link, 100)
    with pytest.raises(SymlinkRefused):
        read_head(link, 100)
    assert read_capped(link, 100, follow_links=True) == b"secret"


@pytest.mark.parametrize("reader", [read_capped, read_head])
def test_a_fifo_a_device_and_a_folder_are_refused_without_hanging(
        tmp_path: Path, reader: Callable[..., Any]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(NotRegularFile, match="not a regular file"):
            _bounded(lambda p=path: reader(p, 1 << 30))  # type: ignore[misc]
        with pytest.raises(NotRegularFile):
            _bounded(lambda p=path: reader(p, 1 << 30, follow_links=True))  # type: ignore[misc]


def test_write_atomic_makes_a_0600_file_and_replaces_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    old = os.umask(0o022)
    try:
        write_atomic(path, "first")
        assert path.read_text() == "first"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        path.chmod(0o644)  # an older file with looser bits: replaced by a 0600 one
        write_atomic(path, b"second")
        assert path.read_bytes() == b"second"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pins.json"]  # no temp file left


def test_write_atomic_never_writes_through_a_link_or_to_a_fifo(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("untouched")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(SymlinkRefused, match="not replaced"):
        write_atomic(link, "evil")
    assert target.read_text() == "untouched" and link.is_symlink()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match="not replaced"):
        _bounded(lambda: write_atomic(fifo, "x"))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_failed_write_leaves_the_old_content_and_no_temp_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "record.json"
    write_atomic(path, "old")

    def broken(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_another_mode_can_be_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "shared.txt"
    write_atomic(path, "x", mode=0o644)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_cap_can_follow_what_the_file_says_of_itself(tmp_path: Path) -> None:
    path = tmp_path / "counted"
    path.write_bytes(b"3\n" + b"x" * 30)
    told: list[bytes] = []

    def cap(head: bytes) -> int:
        told.append(head)
        return int(head.split(b"\n")[0]) * 10 + 2

    assert read_capped(path, cap) == b"3\n" + b"x" * 30
    assert told == [b"3\n" + b"x" * 30]  # the head, at most HEAD_BYTES of it
    path.write_bytes(b"2\n" + b"x" * 30)
    with pytest.raises(TooLarge) as refused:
        read_capped(path, cap)
    assert refused.value.limit == 22


def test_private_refuses_what_others_can_write(tmp_path: Path) -> None:
    path = tmp_path / "mine"
    path.write_bytes(b"data")
    path.chmod(0o644)
    assert read_capped(path, 100, private=True) == b"data"
    path.chmod(0o664)
    with pytest.raises(files.NotPrivate, match=r"can be written by its group \(mode 0664, "
                                                r"owner .*uid \d+\)"):
        read_capped(path, 100, private=True)
    assert read_capped(path, 100) == b"data"  # only when asked

"""The pins file itself (``toolbench._bench.overtime.pins.PinFile``): refused when others can
write it (ssh's StrictModes), every refusal naming the file and the rule, read back whatever
the bench wrote, and a save that never overwrites what another bench pinned meanwhile."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench._bench.overtime import pins as pins_mod
from toolbench._bench.overtime.pins import PinFile

_EMPTY = '{"version": 1, "pins": {}}'


def _pin(fingerprint: str, item: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"fingerprint": fingerprint, "item": item or {"kind": "tool", "name": "t"},
            "pinned": "2026-01-31T12:00:00+00:00"}


def _another_user(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``path`` look owned by someone else: chown it as root, else change who we are."""
    if os.geteuid() == 0:
        os.chown(path, 4242, 4242)
    else:
        me = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: me + 4242)


# -- StrictModes ------------------------------------------------------------------------------
@pytest.mark.parametrize(("mode", "told"), [(0o666, "0666"), (0o620, "0620"), (0o602, "0602")])
def test_a_pins_file_others_can_write_is_refused_naming_its_mode_and_owner(
        tmp_path: Path, mode: int, told: str) -> None:
    path = tmp_path / "pins.json"
    path.write_text(_EMPTY)
    path.chmod(mode)
    with pytest.raises(ValueError) as refused:
        tb.Bench(pins=path, journal=tmp_path / "calls.sqlite")
    text = str(refused.value)
    assert text.startswith(f"pins file {str(path)!r}")
    assert f"mode {told}" in text and "owner" in text and "StrictModes" in text
    assert not (tmp_path / "calls.sqlite").exists()  # refused before the journal opened
    path.chmod(0o644)  # readable by others is fine: only writing is a threat
    PinFile(path).close()


def test_a_pins_file_owned_by_another_user_is_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "pins.json"
    path.write_text(_EMPTY)
    path.chmod(0o600)
    _another_user(path, monkeypatch)
    with pytest.raises(ValueError, match=r"pins file .*pins\.json' is owned by another user "
                                         r"\(mode 0600, owner .*\)"):
        PinFile(path)


def test_a_pins_file_in_a_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(ValueError, match=r"pins file .* is in a folder that others can "
                                         r"write .*mode 0777"):
        PinFile(folder / "pins.json")
    folder.chmod(0o1777)  # sticky, as /tmp: others cannot replace a file they do not own
    PinFile(folder / "pins.json").close()


def test_a_lock_file_owned_by_another_user_is_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "pins.json"
    pin_file = PinFile(path)
    lock = tmp_path / "pins.json.lock"
    lock.write_text("")
    lock.chmod(0o600)
    _another_user(lock, monkeypatch)
    with pytest.raises(ValueError, match=r"pins lock file .*pins\.json\.lock' is owned by "
                                         "another user"):
        pin_file.save({("s", "tool", "t"): _pin("a")})
    pin_file.close()


# -- every refusal names the file -------------------------------------------------------------
@pytest.mark.parametrize("content", [
    '{"version": 1, "pins": {}, "x": ' + "7" * 5000 + "}",
    '{"version": ' + "9" * 5000 + ', "pins": {}}',
    '{"version": 1, "pins": {"' + "s" * 100_000 + '": 1}}',
])
def test_a_malformed_pins_file_is_refused_naming_the_file_and_the_rule(
        tmp_path: Path, content: str) -> None:
    path = tmp_path / "pins.json"
    path.write_text(content)
    with pytest.raises(ValueError) as refused:
        PinFile(path)
    text = str(refused.value)
    assert text.startswith(f"pins file {str(path)!r}")
    assert "Exceeds the limit" not in text and "sys.set_int_max_str_digits" not in text
    assert len(text) < 600  # names the rule; does not quote the file back


# -- what the bench writes, it reads back -------------------------------------------------------
def test_a_pins_file_of_ten_thousand_large_pins_reads_back(tmp_path: Path) -> None:
    """10,000 tools (the default max_tools) with ~3.6 kB schemas: over 32 MiB of pins."""
    path = tmp_path / "pins.json"
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string", "description":
                                                         "x" * 60} for i in range(40)}}
    entries = {("big", "tool", f"t{i:05d}"): _pin(f"{i:064x}", {
        "kind": "tool", "name": f"t{i:05d}", "description": "d", "input_schema": schema})
        for i in range(10_000)}
    pin_file = PinFile(path)
    pin_file.save(entries)
    pin_file.close()
    assert path.stat().st_size > 32 * 1024 * 1024
    again = PinFile(path)
    assert len(again.pins) == 10_000
    assert again.pins[("big", "tool", "t00042")]["item"]["input_schema"] == schema
    again.close()


def test_one_huge_item_is_pinned_by_its_fingerprint_alone(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    huge = {"kind": "tool", "name": "t", "description": "x" * 1_000_000}
    pin_file = PinFile(path)
    pin_file.save({("s", "tool", "t"): _pin("f" * 64, huge), ("s", "tool", "u"): _pin("e")})
    pin_file.close()
    assert path.stat().st_size < pins_mod.MAX_PIN_BYTES * 2 + 4096
    pins = PinFile(path).pins
    assert pins[("s", "tool", "t")]["fingerprint"] == "f" * 64
    assert "item" not in pins[("s", "tool", "t")]
    assert pins[("s", "tool", "t")]["item_bytes"] > 1_000_000
    assert pins[("s", "tool", "u")]["item"] == {"kind": "tool", "name": "t"}


# -- a save never overwrites another bench's pin ------------------------------------------------
def test_a_save_does_not_overwrite_what_another_bench_pinned_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    first, second = PinFile(path), PinFile(path)  # both saw no pin for the item
    key = ("s", "tool", "t")
    assert first.save({key: _pin("aaa")}) == {}
    conflicts = second.save({key: _pin("bbb"), ("s", "tool", "u"): _pin("ccc")})
    assert set(conflicts) == {key}
    assert conflicts[key]["fingerprint"] == "aaa"  # the pin the file holds, that won
    assert second.pins[key]["fingerprint"] == "aaa"  # what the second bench now trusts
    on_disk = json.loads(path.read_text())["pins"]["s"]["tool"]
    assert on_disk["t"]["fingerprint"] == "aaa" and on_disk["u"]["fingerprint"] == "ccc"
    # a pin it knew (read, or written by itself) it may change: approving a new version
    assert first.save({key: _pin("ddd")}) == {}
    # the second bench now knows "aaa", but the file moved on to "ddd": a conflict again
    assert second.save({key: _pin("eee")})[key]["fingerprint"] == "ddd"
    # the same fingerprint as the file's is no conflict
    assert second.save({key: _pin("ddd")}) == {}
    future = first.save_soon({key: _pin("fff")})
    assert future.result(10) == {}
    first.close()
    second.close()


def test_files_the_bench_writes_are_private(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    pin_file = PinFile(path)
    pin_file.save({("s", "tool", "t"): _pin("a")})
    pin_file.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "pins.json.lock").stat().st_mode) == 0o600
    PinFile(path).close()  # and it passes its own StrictModes check


def test_a_folder_writable_by_a_shared_group_is_refused(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from toolbench._core import files

    folder = tmp_path / "team"
    folder.mkdir()
    folder.chmod(0o775)
    monkeypatch.setattr(files, "_private_group", lambda gid: False)
    with pytest.raises(ValueError, match="in a folder that others can write"):
        PinFile(folder / "pins.json")
    monkeypatch.setattr(files, "_private_group", lambda gid: True)  # only you in it
    PinFile(folder / "pins.json").close()

"""Rows read straight from a SQLite file's table-leaf pages, for a file SQLite calls damaged.

Why: a truncated journal loses the interior pages that lead to its rows, so SQLite stops at
the damage, while most rows still sit intact in leaf pages further on. This reads the file
format (https://sqlite.org/fileformat2.html) as SQLite's own recovery does; it never writes.
"""

from __future__ import annotations

import struct
from typing import Any


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


_FIXED = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8}


def leaf_rows(path: str, width: int) -> list[tuple[Any, ...]]:
    """``(rowid, col1, ...)`` of every table-leaf cell with ``width`` columns in the file.

    Reads the file format directly (https://sqlite.org/fileformat2.html): page size and
    reserved bytes from the header, then each table-leaf page's cells, following overflow
    chains while they last. A cell whose bytes are gone is skipped.
    """
    with open(path, "rb") as f:
        data = f.read()
    if data[:16] != b"SQLite format 3\x00":
        return []
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    usable = page_size - data[20]
    pages = len(data) // page_size
    out: list[tuple[Any, ...]] = []
    for number in range(1, pages + 1):
        base = (number - 1) * page_size
        head = base + (100 if number == 1 else 0)
        if data[head] != 0x0D:  # not a table leaf
            continue
        cells = int.from_bytes(data[head + 3:head + 5], "big")
        for i in range(cells):
            try:
                at = base + int.from_bytes(data[head + 8 + 2 * i:head + 10 + 2 * i], "big")
                size, at = _varint(data, at)
                rowid, at = _varint(data, at)
                payload = _payload(data, at, size, usable, page_size)
                row = _decode_record(payload, width)
            except (IndexError, ValueError, UnicodeDecodeError):
                continue
            if row is not None:
                out.append((rowid, *row[1:]))
    return out


def _payload(data: bytes, at: int, size: int, usable: int, page_size: int) -> bytes:
    most = usable - 35
    if size <= most:
        return data[at:at + size]
    least = (usable - 12) * 32 // 255 - 23
    local = least + (size - least) % (usable - 4)
    local = local if local <= most else least
    parts = [data[at:at + local]]
    remaining = size - local
    page = int.from_bytes(data[at + local:at + local + 4], "big")
    while remaining > 0:
        if page < 1 or page * page_size > len(data):
            raise ValueError("overflow page lost")
        base = (page - 1) * page_size
        take = min(remaining, usable - 4)
        parts.append(data[base + 4:base + 4 + take])
        remaining -= take
        page = int.from_bytes(data[base:base + 4], "big")
    return b"".join(parts)


def _decode_record(payload: bytes, width: int) -> list[Any] | None:
    header, at = _varint(payload, 0)
    types = []
    while at < header:
        kind, at = _varint(payload, at)
        types.append(kind)
    if len(types) != width:
        return None
    values: list[Any] = []
    at = header
    for kind in types:
        if kind == 0:
            values.append(None)
        elif kind in (8, 9):
            values.append(kind - 8)
        elif kind == 7:
            values.append(struct.unpack(">d", payload[at:at + 8])[0])
            at += 8
        elif kind in _FIXED:
            n = _FIXED[kind]
            values.append(int.from_bytes(payload[at:at + n], "big", signed=True))
            at += n
        elif kind >= 12:
            n = (kind - 12) // 2
            chunk = payload[at:at + n]
            if len(chunk) != n:
                raise ValueError("record cut short")
            values.append(chunk.decode() if kind % 2 else chunk)
            at += n
        else:
            raise ValueError("reserved serial type")
    return values

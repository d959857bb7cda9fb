"""A tiny RGB canvas that encodes itself as PNG with only zlib and struct.

The demo server must return an image without pulling matplotlib or Pillow into a server
process; a few dots and lines on a grid is all the map needs.
"""

from __future__ import annotations

import struct
import zlib

Colour = tuple[int, int, int]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Canvas:
    """A width × height RGB image, origin at the top left."""

    def __init__(self, width: int, height: int, background: Colour = (255, 255, 255)) -> None:
        if not (1 <= width <= 4096 and 1 <= height <= 4096):
            raise ValueError(f"canvas size {width}x{height} is outside 1..4096 pixels per side")
        self.width = width
        self.height = height
        self._rows = [bytearray(bytes(background) * width) for _ in range(height)]

    def pixel(self, x: int, y: int, colour: Colour) -> None:
        """Paint one pixel; points off the canvas are ignored, so callers need not clip."""
        if 0 <= x < self.width and 0 <= y < self.height:
            self._rows[y][3 * x : 3 * x + 3] = bytes(colour)

    def dot(self, x: int, y: int, radius: int, colour: Colour) -> None:
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                if dx * dx + dy * dy <= radius * radius + radius:
                    self.pixel(x + dx, y + dy, colour)

    def line(self, x0: int, y0: int, x1: int, y1: int, colour: Colour) -> None:
        """Bresenham's line, endpoints included."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.pixel(x0, y0, colour)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def png(self) -> bytes:
        """The image as PNG bytes: 8-bit RGB, no interlace, filter type 0 on every row."""
        raw = b"".join(b"\x00" + bytes(row) for row in self._rows)
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            PNG_SIGNATURE
            + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b"")
        )


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

"""The first bytes a stdio server wrote on stdout, kept to explain a failed start.

A program that is not an MCP server (``cat``, a script that prints a banner, a shell) fails
the handshake in odd ways: ``cat`` echoes the client's own request, which comes back as
"Method not found". What it actually wrote says what happened, so the first
``FIRST_BYTES`` of stdout are kept, raw, for the connect's error (escaped and redacted there).
"""

from __future__ import annotations

from typing import Any

from anyio.abc import ByteReceiveStream

FIRST_BYTES = 200
"""How much of a server's stdout is kept."""


class FirstBytes(ByteReceiveStream):
    """A byte stream that copies the first ``FIRST_BYTES`` it passes into ``kept``."""

    def __init__(self, inner: ByteReceiveStream, kept: bytearray) -> None:
        self._inner = inner
        self._kept = kept

    async def receive(self, max_bytes: int = 65536) -> bytes:
        chunk: bytes = await self._inner.receive(max_bytes)
        room = FIRST_BYTES - len(self._kept)
        if room > 0:
            self._kept += chunk[:room]
        return chunk

    async def aclose(self) -> None:
        await self._inner.aclose()

    @property
    def extra_attributes(self) -> Any:
        return self._inner.extra_attributes

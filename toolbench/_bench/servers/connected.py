"""What ``Bench.connect`` returns: the number of tools added, saying what connected.

An ``int`` (``bench.connect(...) == 3`` holds, and arithmetic works), whose repr names the
server, the count and the transport, so a REPL or a notebook cell that ends with
``bench.connect(...)`` shows ``<connected 'time': 2 tools (stdio)>`` rather than a bare ``2``,
and ``print(bench.connect(...))`` prints ``connected 'time': 2 tools (stdio)`` (issue 37).
Formatting stays a plain number: ``f"{n} tools"`` is ``"2 tools"``, ``f"{n:03d}"`` ``"002"``.
"""

from __future__ import annotations

from toolbench._core.html import counted


class Connected(int):
    """How many tools a server added to the catalog; its repr says which server, and how.

    Attributes:
        server: the server's local name.
        transport: ``stdio``, ``http``, ``sse``, ``in-process``, ``toolbox`` or ``toolset``.
    """

    server: str
    transport: str

    def __new__(cls, tools: int, server: str, transport: str) -> Connected:
        made = super().__new__(cls, tools)
        made.server = server
        made.transport = transport
        return made

    def __repr__(self) -> str:
        return f"<connected {self.server!r}: {counted(int(self), 'tool')} ({self.transport})>"

    def __str__(self) -> str:
        return self.__repr__()[1:-1]

    def __format__(self, spec: str) -> str:
        return format(int(self), spec)

    def __reduce__(self) -> tuple[type[Connected], tuple[int, str, str]]:
        return (Connected, (int(self), self.server, self.transport))

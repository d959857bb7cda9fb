"""A counting listener on 127.0.0.1 for escape tests: what a view managed to send out.

One port, both protocols: every TCP connection is counted with the request line it sent
(when it sent one), every UDP datagram is counted, and an HTTP request gets ``page`` back,
so a view that navigates its frame here lands on a page the test wrote (one that tries the
bridge and reports, with another request, if it was answered).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Hits:
    """What reached the listener: ``tcp`` request lines (``""`` for a connection that sent
    none in time) and ``udp`` datagram sizes, in arrival order."""

    port: int
    tcp: list[str] = field(default_factory=list)
    udp: list[int] = field(default_factory=list)

    def paths(self, prefix: str) -> list[str]:
        """The request paths that start with ``prefix`` (e.g. ``/leak-href``)."""
        found = []
        for line in list(self.tcp):
            parts = line.split(" ")
            if len(parts) >= 2 and parts[1].startswith(prefix):
                found.append(parts[1])
        return found


@contextlib.contextmanager
def counting_listener(page: bytes = b"<!doctype html><p>counted</p>") -> Iterator[Hits]:
    """Listen on one free 127.0.0.1 port, TCP and UDP, until the block ends."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(16)
    tcp.settimeout(0.1)
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    udp.settimeout(0.1)
    hits = Hits(port)
    stop = threading.Event()
    reply = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
             b"Content-Length: " + str(len(page)).encode() + b"\r\n\r\n" + page)

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2)
            data = b""
            with contextlib.suppress(OSError):
                while b"\r\n" not in data and len(data) < 8192:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            hits.tcp.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
            with contextlib.suppress(OSError):
                conn.sendall(reply)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = tcp.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    def receive() -> None:
        while not stop.is_set():
            try:
                data, _ = udp.recvfrom(65536)
            except OSError:
                continue
            hits.udp.append(len(data))

    threads = [threading.Thread(target=accept, daemon=True),
               threading.Thread(target=receive, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        yield hits
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
        tcp.close()
        udp.close()

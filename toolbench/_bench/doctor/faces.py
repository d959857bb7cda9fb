"""The doctor's face on ``Bench``: ``doctor(name)`` walks one server's connection.

``DoctorFaces`` holds no state: it finds the server's settings (the bench's row, or a
config file) and runs the walk (``doctor.diagnose``) on the shared loop, bounded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolbench._bench.doctor.diagnose import diagnose, settings, step_timeout
from toolbench._core.checks import seconds
from toolbench._loop import get_loop

if TYPE_CHECKING:
    from toolbench._bench.doctor.steps import Diagnosis
    from toolbench._bench.servers.servers import Servers


class DoctorFaces:
    """Why a server does not connect, step by step; a face over the doctor."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        connections: Servers

    def doctor(self, name: str, *, config: Any = None,
               timeout: float | None = None) -> Diagnosis:
        """Try server ``name``'s connection step by step, and show each step's outcome, time
        and evidence: for stdio, the command found (and where it looked), the process
        started, stdout speaking JSON-RPC (or printing logs), ``initialize`` or
        ``server/discover`` answered and in which era, tools listed; for HTTP, the name
        resolved, TCP, TLS, the HTTP status, a 401's resource metadata, MCP answered.

        It starts its own process or requests (the bench's connection is not touched), and
        stops at the first step that fails. In a notebook it shows as a checklist.

        Args:
            name: a server of this bench (connected or failed), or of ``config``.
            config: a config file (any client's format) or mapping to take ``name`` from.
            timeout: seconds each step may take; by default the server's own
                ``connect_timeout``, else the bench's (30 s unless the bench says).

        Returns:
            A ``Diagnosis``: ``.steps`` (name, status, seconds, evidence), ``.ok``,
            ``.failed`` (the step that failed).

        Raises:
            KeyError: no such server here (or in ``config``).
            ValueError: a ``timeout`` that is not a positive, finite number of seconds.

        Example:
            >>> bench.doctor("time")                                    # doctest: +SKIP
        """
        given = None if timeout is None else seconds(timeout, "timeout")
        target, options = settings(name, config, self.connections)
        bound = step_timeout(given, options, self.connections.connect_timeout)
        return get_loop().run(diagnose, name, target, options, bound)

    async def adoctor(self, name: str, *, config: Any = None,
                      timeout: float | None = None) -> Diagnosis:
        """Awaitable :meth:`doctor`: the same arguments, result and errors."""
        given = None if timeout is None else seconds(timeout, "timeout")
        target, options = settings(name, config, self.connections)
        bound = step_timeout(given, options, self.connections.connect_timeout)
        return await get_loop().arun(diagnose, name, target, options, bound)

"""Demo MCP server ``flaky``: a crude, slow and unreliable ``distance``, on purpose.

Run it over stdio with ``python -m toolbench.demo.flaky [--latency-ms N] [--jitter-ms N]
[--failure-rate P] [--seed S]`` (or the ``TOOLBENCH_DEMO_*`` environment variables). It shows
what a comparison looks like when one server is wrong by percent, slow, and sometimes fails:
a failure comes back as a tool error (``isError``), which toolbench records as ``landed``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from toolbench.demo._cities import (
    UNIT_HELP,
    City,
    CityName,
    Unit,
    convert,
    lookup,
)
from toolbench.demo._geodesy import equirectangular
from toolbench.demo._settings import FlakySettings

NAME = "flaky"
INSTRUCTIONS = (
    "A deliberately unreliable offline geography server for learning MCP. `distance` "
    "pretends the map is flat (the equirectangular approximation): fine for nearby cities, "
    "wrong by several percent across oceans. `distance` and `city` are slow and sometimes "
    "fail on purpose; `status` shows the settings and counts."
)
MAX_WAIT_S = 60.0


class FlakyStatus(BaseModel):
    """The answer of `status`: how this server was configured, and what it has done."""

    latency_ms: float = Field(description="Fixed delay added to every `distance`/`city` call.")
    jitter_ms: float = Field(description="Up to this much extra random delay per call.")
    failure_rate: float = Field(description="Probability that a call fails on purpose.")
    seed: int | None = Field(description="Seed of the random failures; null means random.")
    calls: int = Field(description="`distance` and `city` calls received so far.")
    failures: int = Field(description="How many of those failed on purpose.")


class _Chaos:
    """Delay and deliberate failure, drawn from seeded generators so runs can be repeated.

    Failures and jitter use separate generators: changing the jitter must not change which
    calls fail.
    """

    def __init__(self, settings: FlakySettings) -> None:
        self.settings = settings
        seeded = settings.seed is not None
        self._fail = random.Random(f"{settings.seed}-fail" if seeded else None)
        self._jitter = random.Random(f"{settings.seed}-jitter" if seeded else None)
        self.calls = 0
        self.failures = 0

    async def __call__(self, tool: str) -> None:
        self.calls += 1
        number = self.calls  # read now: concurrent calls move self.calls during the sleep
        fails = self._fail.random() < self.settings.failure_rate
        delay_ms = self.settings.latency_ms + self._jitter.uniform(0.0, self.settings.jitter_ms)
        await anyio.sleep(delay_ms / 1000.0)
        if fails:
            self.failures += 1
            raise ToolError(
                f"simulated failure of {tool!r} (call {number}; this server fails "
                f"{self.settings.failure_rate * 100:g}% of calls on purpose, so you can see how "
                "failures are reported). Calling again may succeed."
            )


def create(settings: FlakySettings | None = None) -> MCPServer:
    """A fresh ``flaky`` server (also usable in process: ``mcp.Client(create(...))``)."""
    chaos = _Chaos(settings or FlakySettings())
    server = MCPServer(NAME, instructions=INSTRUCTIONS)

    @server.tool(name="distance", title="Distance (flat map, unreliable)")
    async def distance(
        from_city: CityName,
        to_city: CityName,
        unit: Annotated[Unit, Field(description=UNIT_HELP)] = "km",
    ) -> float:
        """Approximate distance between two cities, pretending the map is flat.

        Uses the equirectangular approximation (Pythagoras on a map stretched by the cosine of
        the latitude): close for neighbouring cities, several percent too long across oceans.
        This server is also slow and fails some calls on purpose; see `status`.
        """
        a, b = lookup(from_city, argument="from_city"), lookup(to_city, argument="to_city")
        await chaos("distance")
        return convert(equirectangular(a.lat, a.lon, b.lat, b.lon), unit)

    @server.tool(name="city", title="Look up a city (unreliable)")
    async def city(name: CityName) -> City:
        """Look up one city in the bundled table: its country, coordinates and population.

        Same answer as the other demo servers' `city`, but slow, and it fails some calls on
        purpose. An unknown name is a tool error that lists close matches.
        """
        found = lookup(name, argument="name")
        await chaos("city")
        return found

    @server.tool(name="status", title="Flakiness settings and counts")
    def status() -> FlakyStatus:
        """How slow and unreliable this server is set to be, and how many calls have failed.

        Never delayed and never fails, so it is safe to call any time.
        """
        s = chaos.settings
        return FlakyStatus(
            latency_ms=s.latency_ms,
            jitter_ms=s.jitter_ms,
            failure_rate=s.failure_rate,
            seed=s.seed,
            calls=chaos.calls,
            failures=chaos.failures,
        )

    @server.tool(name="wait", title="Wait, reporting progress")
    async def wait(
        seconds: Annotated[
            float,
            Field(description=f"How long to wait, 0 to {MAX_WAIT_S:g} s.", ge=0, le=MAX_WAIT_S),
        ],
        ctx: Context,
    ) -> float:
        """Wait for the given time, reporting progress about ten times, then return the
        seconds actually waited.

        Useful to try out timeouts, progress bars and cancelling a call. Never fails on
        purpose.
        """
        start = time.monotonic()
        steps = max(1, min(10, int(seconds / 0.05)))
        for step in range(1, steps + 1):
            await anyio.sleep(seconds / steps)
            await ctx.report_progress(step, steps, f"waited {seconds * step / steps:.2f} s")
        return round(time.monotonic() - start, 4)

    return server


def main(argv: Sequence[str] | None = None) -> None:
    create(FlakySettings.parse(argv)).run("stdio")


if __name__ == "__main__":
    main()

"""Demo MCP server ``geo_precise``, "version 2": the same server after a quiet update.

Run it over stdio with ``python -m toolbench.demo.geo_precise_v2``. It answers exactly as
``geo_precise`` does, but its ``distance`` tool changed the way real servers change between
versions: the description was rewritten, and the parameter ``unit`` was renamed ``units``.
The over-time tutorial (``07_over_time.ipynb``) restarts ``geo_precise`` with it to show a
snapshot diff, a pin refusing the changed tool, and the approval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from toolbench.demo import geo_precise
from toolbench.demo._cities import UNIT_HELP, CityName, Unit, convert, serve_stdio

NAME = geo_precise.NAME


def create() -> MCPServer:
    """The ``geo_precise`` server with its ``distance`` tool changed (description, parameter)."""
    server = geo_precise.create()
    server.remove_tool("distance")

    @server.tool(name="distance", title="Distance (ellipsoid, Vincenty)")
    def distance(
        from_city: CityName,
        to_city: CityName,
        units: Annotated[Unit, Field(description=UNIT_HELP)] = "km",
    ) -> float:
        """Shortest distance between two cities over the WGS-84 ellipsoid, as GPS measures it.

        Version 2: the parameter `unit` is now called `units`.
        """
        _, _, km, _ = geo_precise._solve(from_city, to_city)
        return convert(km, units)

    return server


def main(argv: Sequence[str] | None = None) -> None:
    serve_stdio("geo_precise_v2", geo_precise.INSTRUCTIONS, create, argv)


if __name__ == "__main__":
    main()

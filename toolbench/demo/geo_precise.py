"""Demo MCP server ``geo_precise``: distances on the WGS-84 ellipsoid (Vincenty's method).

Run it over stdio with ``python -m toolbench.demo.geo_precise``. Its ``distance`` agrees with
GeographicLib to well under a millimetre on the bundled cities, and differs from ``geo``'s
spherical answer by up to about 0.5 %. It costs several times more arithmetic per call
(microseconds, invisible next to a stdio round trip).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from toolbench.demo._cities import (
    UNIT_HELP,
    City,
    CityName,
    Unit,
    add_city_tools,
    convert,
    lookup,
    serve_stdio,
)
from toolbench.demo._geodesy import NoConvergence, vincenty

NAME = "geo_precise"
INSTRUCTIONS = (
    "An offline geography server for learning MCP, with the same city table as `geo`. "
    "`distance` uses the WGS-84 ellipsoid (Vincenty's method), the model GPS uses: accurate "
    "to millimetres, where `geo`'s sphere is off by up to about 0.5 %."
)


def _solve(from_city: str, to_city: str) -> tuple[City, City, float, float]:
    a, b = lookup(from_city, argument="from_city"), lookup(to_city, argument="to_city")
    try:
        km, bearing = vincenty(a.lat, a.lon, b.lat, b.lon)
    except NoConvergence:
        raise ToolError(
            f"Vincenty's method did not converge for {a.name} to {b.name}: the two cities are "
            "almost exactly opposite each other on the globe, where the method is known to "
            "fail. Use the `geo` server's spherical distance instead."
        ) from None
    return a, b, km, bearing


def create() -> MCPServer:
    """A fresh ``geo_precise`` server (also usable in process: ``mcp.Client(create())``)."""
    server = MCPServer(NAME, instructions=INSTRUCTIONS)

    @server.tool(name="distance", title="Distance (ellipsoid, Vincenty)")
    def distance(
        from_city: CityName,
        to_city: CityName,
        unit: Annotated[Unit, Field(description=UNIT_HELP)] = "km",
    ) -> float:
        """Shortest distance between two cities over the surface of the WGS-84 ellipsoid.

        Uses Vincenty's iterative method: the Earth is slightly flattened at the poles, and
        this accounts for it. Accurate to millimetres; compare with `geo`'s spherical answer.
        """
        _, _, km, _ = _solve(from_city, to_city)
        return convert(km, unit)

    @server.tool(name="bearing", title="Initial compass bearing")
    def bearing(from_city: CityName, to_city: CityName) -> float:
        """The compass direction (degrees clockwise from true north, 0 to 360) in which to set
        off from the first city to follow the shortest route to the second.

        On long routes the direction changes along the way, so this is only the first heading:
        London to Tokyo starts off heading roughly north-east (about 32 degrees).
        """
        a, b, _, degrees = _solve(from_city, to_city)
        if a == b:
            raise ToolError(f"the bearing from {a.name} to itself is undefined: pick two cities")
        return round(degrees, 4)

    add_city_tools(server, with_listing=False)
    return server


def main(argv: Sequence[str] | None = None) -> None:
    serve_stdio(NAME, INSTRUCTIONS, create, argv)


if __name__ == "__main__":
    main()

"""Demo MCP server ``geo``: distances on a spherical Earth, city lookup, and a map image.

Run it over stdio with ``python -m toolbench.demo.geo``. Its ``distance`` uses the haversine
formula; ``geo_precise`` and ``flaky`` offer a tool of the same name that answers differently,
which is what the comparison notebooks show.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from pydantic import Field

from toolbench.demo._cities import (
    UNIT_HELP,
    CityName,
    Unit,
    add_city_tools,
    convert,
    lookup,
    serve_stdio,
    table,
)
from toolbench.demo._geodesy import great_circle_points, haversine
from toolbench.demo._png import Canvas

NAME = "geo"
INSTRUCTIONS = (
    "A small offline geography server for learning MCP. It knows about 40 world cities. "
    "`distance` treats the Earth as a perfect sphere (the haversine formula): simple and "
    "within about 0.5 % of the truth. Compare it with the `distance` tool of the `geo_precise` "
    "(ellipsoid) and `flaky` (flat map, slow, unreliable) demo servers."
)

_GRID = (225, 228, 235)
_EQUATOR = (170, 176, 190)
_CITY = (40, 70, 140)
_ROUTE = (214, 40, 40)


def _xy(lat: float, lon: float, width: int, height: int) -> tuple[int, int]:
    """Equirectangular projection: longitude → x, latitude → y, north up."""
    x = int((lon + 180.0) / 360.0 * (width - 1) + 0.5)
    y = int((90.0 - lat) / 180.0 * (height - 1) + 0.5)
    return x, y


def draw_map(
    width: int, route: tuple[str, str] | None = None, highlight: Sequence[str] = ()
) -> bytes:
    """A PNG world map: graticule, every city as a dot, and an optional great-circle route."""
    height = width // 2
    canvas = Canvas(width, height)
    for lon in range(-180, 181, 30):
        x, _ = _xy(0, lon, width, height)
        canvas.line(x, 0, x, height - 1, _GRID)
    for lat in range(-60, 61, 30):
        _, y = _xy(lat, 0, width, height)
        canvas.line(0, y, width - 1, y, _EQUATOR if lat == 0 else _GRID)
    radius = max(1, width // 300)
    for city in table():
        canvas.dot(*_xy(city.lat, city.lon, width, height), radius, _CITY)
    marked = [lookup(name) for name in highlight]
    if route is not None:
        start, end = lookup(route[0], argument="from_city"), lookup(route[1], argument="to_city")
        marked += [start, end]
        points = great_circle_points(start.lat, start.lon, end.lat, end.lon, steps=256)
        for (lat0, lon0), (lat1, lon1) in itertools.pairwise(points):
            if abs(lon1 - lon0) > 180:  # the route crosses the date line: do not draw across
                continue
            canvas.line(*_xy(lat0, lon0, width, height), *_xy(lat1, lon1, width, height), _ROUTE)
    for city in marked:
        canvas.dot(*_xy(city.lat, city.lon, width, height), radius + 2, _ROUTE)
    return canvas.png()


def create() -> MCPServer:
    """A fresh ``geo`` server (also usable in process: ``mcp.Client(create())``)."""
    server = MCPServer(NAME, instructions=INSTRUCTIONS)

    @server.tool(name="distance", title="Distance (sphere, haversine)")
    def distance(
        from_city: CityName,
        to_city: CityName,
        unit: Annotated[Unit, Field(description=UNIT_HELP)] = "km",
    ) -> float:
        """Great-circle distance between two cities, treating the Earth as a sphere.

        Uses the haversine formula with the mean Earth radius (6371.0088 km). It is fast and
        within about 0.5 % of the true (ellipsoidal) distance; compare with `geo_precise`.
        """
        a, b = lookup(from_city, argument="from_city"), lookup(to_city, argument="to_city")
        return convert(haversine(a.lat, a.lon, b.lat, b.lon), unit)

    @server.tool(name="world_map", title="World map image")
    def world_map(
        from_city: Annotated[
            str | None, Field(description="Start of a route to draw (optional).", max_length=100)
        ] = None,
        to_city: Annotated[
            str | None, Field(description="End of the route (optional).", max_length=100)
        ] = None,
        width: Annotated[int, Field(description="Image width in pixels.", ge=90, le=1440)] = 360,
    ) -> Image:
        """Draw the known cities on a world map, returned as a PNG image.

        Give both cities to draw the great-circle route between them in red (it looks curved
        on this flat map, which is why flat-map distances are wrong). Give one to mark it.
        """
        given = [name for name in (from_city, to_city) if name is not None]
        if len(given) == 2:
            png = draw_map(width, route=(given[0], given[1]))
        else:
            png = draw_map(width, highlight=given)
        return Image(data=png, format="png")

    add_city_tools(server)
    return server


def main(argv: Sequence[str] | None = None) -> None:
    serve_stdio(NAME, INSTRUCTIONS, create, argv)


if __name__ == "__main__":
    main()

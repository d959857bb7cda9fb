"""Demo MCP server ``atlas``: the geo demo's cities on a map, an MCP App with its own view.

Run it over stdio with ``python -m toolbench.demo.atlas``, or in process with
``mcp.Client(create())``. It shows what MCP Apps (the extension ``io.modelcontextprotocol/ui``,
specification 2026-01-26) look like from a server's side, offline:

- ``show_map`` declares a view, ``_meta.ui.resourceUri = "ui://atlas/map.html"`` (and the older
  ``_meta["ui/resourceUri"]``). A host that renders MCP Apps shows that HTML beside the result;
  any other client gets the text answer, which stands alone.
- ``ui://atlas/map.html`` is a ``text/html;profile=mcp-app`` resource: one self-contained HTML
  document written in this project (``data/atlas_map.html``), an inline SVG map, no network,
  so its ``_meta.ui.csp`` declares no domain at all. It speaks the MCP Apps JSON-RPC over
  ``postMessage`` by hand: ``ui/initialize``, ``ui/notifications/initialized``, then
  ``tools/call`` back through the host.
- ``map_cities`` is app-only (``_meta.ui.visibility = ["app"]``): the view calls it to draw the
  cities, and a model is not meant to see it.
- ``distance`` (haversine, as on ``geo``) is for the model and the app alike: the view's
  "Measure distance" button calls it.

Only this module and ``_cities``/``_geodesy`` are imported: the server keeps working while the
rest of toolbench moves.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources
from typing import Annotated, Any, Final

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from toolbench.demo._cities import UNIT_HELP, CityName, Unit, convert, lookup, serve_stdio, table
from toolbench.demo._geodesy import haversine

NAME = "atlas"
INSTRUCTIONS = (
    "An offline demo server with an MCP App: `show_map` opens an interactive map of the demo's "
    "cities in hosts that render MCP Apps (a notebook with toolbench does), and answers in "
    "text elsewhere. `distance` is the haversine great-circle distance, as on the `geo` demo."
)
VIEW_URI: Final = "ui://atlas/map.html"
MIME_TYPE: Final = "text/html;profile=mcp-app"
VIEW_UI: Final[dict[str, Any]] = {"csp": {}, "prefersBorder": True}
"""The view's ``_meta.ui``: it loads nothing from anywhere (no domain), and wants a border."""


@functools.cache
def view_html() -> str:
    """The view: a self-contained HTML document shipped with the package."""
    return resources.files("toolbench.demo").joinpath("data/atlas_map.html").read_text("utf-8")


class MapCity(BaseModel):
    name: str = Field(description="The city's usual English name.")
    country: str = Field(description="The country it is in.")
    lat: float = Field(description="Latitude in degrees, north positive.")
    lon: float = Field(description="Longitude in degrees, east positive.")


class MapCities(BaseModel):
    """The answer of `map_cities`: every city the view can draw."""

    count: int = Field(description="How many cities there are.")
    cities: list[MapCity] = Field(description="The cities, in table order.")


def create() -> MCPServer:
    """A fresh ``atlas`` server (also usable in process: ``mcp.Client(create())``)."""
    server = MCPServer(NAME, instructions=INSTRUCTIONS)

    @server.resource(VIEW_URI, name="atlas-map", title="Map of the demo cities",
                     description="The MCP App view of show_map: an SVG map, offline.",
                     mime_type=MIME_TYPE, meta={"ui": VIEW_UI})
    def map_view() -> str:
        return view_html()

    @server.tool(name="show_map", title="Show the cities on a map",
                 meta={"ui": {"resourceUri": VIEW_URI}, "ui/resourceUri": VIEW_URI})
    def show_map(
        from_city: Annotated[
            str | None, Field(description="A city to mark as the start (optional).",
                              max_length=100)] = None,
        to_city: Annotated[
            str | None, Field(description="A city to mark as the end (optional).",
                              max_length=100)] = None,
        unit: Annotated[Unit, Field(description=UNIT_HELP)] = "km",
    ) -> CallToolResult:
        """Show the demo's cities on an interactive world map (an MCP App view).

        Give two cities to mark a route and get its great-circle distance. In a host that
        renders MCP Apps, the map lets a person pick cities and measure distances; elsewhere
        the text answer says the same in words.
        """
        data: dict[str, Any] = {"cities": len(table()), "unit": unit}
        text = f"A map of {len(table())} cities."
        if from_city is not None and to_city is not None:
            a, b = lookup(from_city, argument="from_city"), lookup(to_city, argument="to_city")
            km = haversine(a.lat, a.lon, b.lat, b.lon)
            data |= {"from_city": a.name, "to_city": b.name, "distance": convert(km, unit)}
            text += f" {a.name} to {b.name}: {data['distance']} {unit} (great circle)."
        else:
            for key, name in (("from_city", from_city), ("to_city", to_city)):
                if name is not None:
                    data[key] = lookup(name, argument=key).name
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=data)

    @server.tool(name="map_cities", title="Cities for the map view",
                 meta={"ui": {"visibility": ["app"]}})
    def map_cities() -> MapCities:
        """Every city with its coordinates, for the map view to draw (app-only)."""
        rows = [MapCity(name=c.name, country=c.country, lat=c.lat, lon=c.lon) for c in table()]
        return MapCities(count=len(rows), cities=rows)

    @server.tool(name="distance", title="Distance (sphere, haversine)")
    def distance(
        from_city: CityName,
        to_city: CityName,
        unit: Annotated[Unit, Field(description=UNIT_HELP)] = "km",
    ) -> float:
        """Great-circle distance between two cities, treating the Earth as a sphere.

        The same haversine answer as the `geo` demo's `distance`; the map view calls it.
        """
        a, b = lookup(from_city, argument="from_city"), lookup(to_city, argument="to_city")
        return convert(haversine(a.lat, a.lon, b.lat, b.lon), unit)

    return server


def main(argv: Sequence[str] | None = None) -> None:
    serve_stdio(NAME, INSTRUCTIONS, create, argv)


if __name__ == "__main__":
    main()

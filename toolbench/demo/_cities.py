"""The bundled table of world cities, and the lookup every demo server shares.

A tiny fixed table keeps the demo offline and deterministic, and lets a tool reject an unknown
name with a helpful error (the close matches), which is what a newcomer needs to see.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
import unicodedata
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from toolbench.demo._geodesy import KM_PER_UNIT, haversine

Unit = Literal["km", "mi", "nmi"]
UNIT_HELP = "Unit of the answer: km (kilometres), mi (statute miles) or nmi (nautical miles)."
CityName = Annotated[
    str,
    Field(
        description="A city from the bundled table, e.g. 'London' or 'Sao Paulo'. Case and "
        "accents do not matter. The `cities` tool lists them all.",
        max_length=100,
    ),
]


class City(BaseModel):
    """One row of the bundled table."""

    name: str = Field(description="The city's usual English name.")
    country: str = Field(description="The country it is in.")
    lat: float = Field(description="Latitude in degrees, north positive (WGS-84).")
    lon: float = Field(description="Longitude in degrees, east positive (WGS-84).")
    population: int = Field(description="Approximate population, rounded; for illustration only.")


class CityList(BaseModel):
    """The answer of `cities`: a list is wrapped in an object so it has a schema to check."""

    count: int = Field(description="How many cities matched.")
    cities: list[City] = Field(description="The matching cities, in table order.")


class Neighbour(BaseModel):
    name: str = Field(description="A nearby city.")
    country: str = Field(description="Its country.")
    distance: float = Field(description="Great-circle distance from the starting city.")


class Nearest(BaseModel):
    """The answer of `nearest`."""

    city: str = Field(description="The city you asked about.")
    unit: Unit = Field(description="The unit of every distance below.")
    neighbours: list[Neighbour] = Field(description="The closest cities, nearest first.")


def _fold(text: str) -> str:
    """Compare names the way a person would: no case, no accents, single spaces."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(plain.replace("-", " ").split())


@functools.cache
def table() -> tuple[City, ...]:
    """The bundled cities, read once from the packaged CSV."""
    raw = resources.files("toolbench.demo").joinpath("data/cities.csv").read_text("utf-8")
    return tuple(
        City(
            name=row["name"],
            country=row["country"],
            lat=float(row["lat"]),
            lon=float(row["lon"]),
            population=int(row["population"]),
        )
        for row in csv.DictReader(io.StringIO(raw))
    )


@functools.cache
def _index() -> dict[str, City]:
    return {_fold(city.name): city for city in table()}


def _shown(value: str) -> str:
    """Quote a caller's value for an error message, cut short so a huge one stays readable."""
    return repr(value if len(value) <= 60 else value[:57] + "...")


def lookup(name: str, *, argument: str = "city") -> City:
    """The city called ``name``; otherwise a tool error naming the value and its close matches."""
    found = _index().get(_fold(name))
    if found is not None:
        return found
    by_fold = {_fold(city.name): city.name for city in table()}
    close = difflib.get_close_matches(_fold(name), list(by_fold), n=3, cutoff=0.6)
    hint = (
        "Did you mean " + " or ".join(repr(by_fold[c]) for c in close) + "?"
        if close
        else "No close match."
    )
    raise ToolError(
        f"unknown city {_shown(name)} for argument {argument!r}. {hint} "
        f"This demo knows {len(table())} cities; call the `cities` tool to list them."
    )


def convert(km: float, unit: str) -> float:
    """Kilometres to ``unit``, rounded to metre-ish precision so answers read cleanly."""
    try:
        per_unit = KM_PER_UNIT[unit]
    except KeyError:  # the input schema already forbids this; keep the message clear anyway
        raise ToolError(
            f"unknown unit {_shown(unit)}: use one of {', '.join(KM_PER_UNIT)}"
        ) from None
    return round(km / per_unit, 3)


def add_city_tools(server: MCPServer, *, with_listing: bool = True) -> None:
    """Register `city` (and `cities`, `nearest`), which behave the same on every demo server."""

    @server.tool(name="city", title="Look up a city")
    def city(name: CityName) -> City:
        """Look up one city in the bundled table: its country, coordinates and population.

        Returns structured content that matches the tool's output schema (a JSON object with
        name, country, lat, lon and population). An unknown name is a tool error that lists
        close matches.
        """
        return lookup(name, argument="name")

    if not with_listing:
        return

    @server.tool(name="cities", title="List the known cities")
    def cities(
        country: Annotated[
            str | None,
            Field(description="Only cities in this country (e.g. 'Brazil'); omit for all."),
        ] = None,
    ) -> CityList:
        """List the cities this demo knows, optionally only those of one country.

        Use it to discover valid names for the other tools. An unknown country is a tool error.
        """
        rows = list(table())
        if country is not None:
            rows = [c for c in rows if _fold(c.country) == _fold(country)]
            if not rows:
                countries = sorted({c.country for c in table()})
                raise ToolError(
                    f"no city in country {_shown(country)}. Known countries: "
                    + ", ".join(countries)
                )
        return CityList(count=len(rows), cities=rows)

    @server.tool(name="nearest", title="Nearest cities")
    def nearest(
        city: CityName,
        k: Annotated[int, Field(description="How many neighbours to return.", ge=1, le=10)] = 3,
        unit: Annotated[Unit, Field(description=UNIT_HELP)] = "km",
    ) -> Nearest:
        """The k cities closest to a city, by great-circle (haversine) distance, nearest first."""
        origin = lookup(city)
        ranked = sorted(
            ((haversine(origin.lat, origin.lon, c.lat, c.lon), c) for c in table() if c != origin),
            key=lambda pair: (pair[0], pair[1].name),  # names break ties; City is not orderable
        )
        return Nearest(
            city=origin.name,
            unit=unit,
            neighbours=[
                Neighbour(name=c.name, country=c.country, distance=convert(km, unit))
                for km, c in ranked[:k]
            ],
        )


def serve_stdio(name: str, description: str, create: Callable[[], MCPServer],
                argv: Sequence[str] | None = None) -> None:
    """The ``main`` of a city server: ``--help`` explains it; otherwise serve over stdio."""
    import argparse

    argparse.ArgumentParser(prog=f"python -m toolbench.demo.{name}",
                            description=description).parse_args(argv)
    create().run("stdio")

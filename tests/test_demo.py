"""The bundled demo servers, run as real stdio children through the MCP SDK's own client."""

from __future__ import annotations

import base64
import importlib
import itertools
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ImageContent, TextContent

from toolbench import demo
from toolbench._core.ids import check_server_name, check_tool_name
from toolbench.demo import _geodesy, _settings
from toolbench.demo._cities import table
from toolbench.demo._png import PNG_SIGNATURE, Canvas

T = TypeVar("T")
LONDON, NEW_YORK = (51.5074, -0.1278), (40.7128, -74.0060)
# GeographicLib (Karney) on WGS-84 for the table's London and New York coordinates.
LONDON_NEW_YORK_KM = 5585.2336
CALM = {"latency_ms": 0, "failure_rate": 0}


def run(body: Callable[[], Awaitable[T]], limit: float = 60.0) -> T:
    """Run one async test body with a hard bound, so a hung child cannot hang the suite."""

    async def bounded() -> T:
        with anyio.fail_after(limit):
            return await body()

    return anyio.run(bounded)


@asynccontextmanager
async def connect(name: str, **settings: Any) -> AsyncIterator[Client]:
    """Start demo server ``name`` exactly as ``demo.config()`` describes it, and close it."""
    spec = demo.config(**settings)["mcpServers"][name]
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=spec["env"])
    with tempfile.TemporaryFile("w+") as errlog:
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, read_timeout_seconds=30) as client:
            yield client


def text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def distance(client: Client, a: str, b: str, unit: str = "km") -> float:
    result = await client.call_tool("distance", {"from_city": a, "to_city": b, "unit": unit})
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    value = result.structured_content["result"]
    assert float(text(result)) == value  # the text block says the same as the structured one
    return float(value)


# --- the package surface -------------------------------------------------------------------


def test_config_is_an_mcp_servers_mapping_that_starts_each_module() -> None:
    cfg = demo.config()
    assert list(cfg) == ["mcpServers"]
    assert list(cfg["mcpServers"]) == list(demo.SERVERS) == ["geo", "geo_precise", "flaky"]
    for name, spec in cfg["mcpServers"].items():
        check_server_name(name)
        assert spec["command"] == sys.executable
        assert spec["args"][:2] == ["-m", f"toolbench.demo.{name}"]
        assert demo.command(name) == [sys.executable, "-m", f"toolbench.demo.{name}"]
        assert all(isinstance(v, str) for v in spec["env"].values())
    json.dumps(cfg)  # the exact format desktop clients read: plain JSON


def test_config_passes_flaky_settings_as_flags_and_checks_them() -> None:
    cfg = demo.config(latency_ms=250, failure_rate=0.25, jitter_ms=10.5, seed=7)["mcpServers"]
    assert cfg["flaky"]["args"][2:] == [
        "--latency-ms", "250", "--jitter-ms", "10.5", "--failure-rate", "0.25", "--seed", "7",
    ]
    assert cfg["geo"]["args"] == ["-m", "toolbench.demo.geo"]  # only flaky takes settings
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"failure_rate": 1.5}, ["failure_rate", "1.5", "between 0 and 1"]),
        ({"failure_rate": math.nan}, ["failure_rate", "finite"]),
        ({"latency_ms": -1}, ["latency_ms", "-1", "between 0 and 60000"]),
        ({"latency_ms": "slow"}, ["latency_ms", "'slow'", "number"]),
        ({"seed": 1.5}, ["seed", "1.5", "whole number"]),
    ]
    for kwargs, words in cases:
        with pytest.raises(ValueError) as info:
            demo.config(**kwargs)
        assert all(word in str(info.value) for word in words), str(info.value)
    with pytest.raises(ValueError, match=r"unknown demo server 'nope'.*geo, geo_precise, flaky"):
        demo.command("nope")


def test_config_forwards_demo_environment_variables_to_flaky_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLBENCH_DEMO_FAILURE_RATE", "0.5")
    monkeypatch.setenv("UNRELATED_SECRET", "hunter2")
    cfg = demo.config()["mcpServers"]
    assert cfg["flaky"]["env"]["TOOLBENCH_DEMO_FAILURE_RATE"] == "0.5"
    assert "TOOLBENCH_DEMO_FAILURE_RATE" not in cfg["geo"]["env"]
    assert all("hunter2" not in json.dumps(spec) for spec in cfg.values())


@pytest.mark.slow
def test_importing_the_package_stays_light() -> None:
    code = (
        "import sys, toolbench.demo as d; d.config(); "
        "print(sorted(m for m in ('pandas', 'toolbench.demo.geo', 'toolbench.demo.flaky') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_each_module_has_a_help_that_exits_without_serving(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in demo.SERVERS:
        module = importlib.import_module(f"toolbench.demo.{name}")
        with pytest.raises(SystemExit) as info:
            module.main(["--help"])
        assert info.value.code == 0
        assert f"python -m toolbench.demo.{name}" in capsys.readouterr().out


@pytest.mark.slow
def test_bad_flaky_settings_exit_naming_the_value_and_its_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases: list[tuple[list[str], dict[str, str], list[str]]] = [
        (["--failure-rate", "1.5"], {}, ["--failure-rate", "1.5", "between 0 and 1"]),
        (["--seed", "x"], {}, ["--seed", "'x'", "whole number"]),
        (["--jitter-ms", "inf"], {}, ["--jitter-ms", "finite"]),
        ([], {"TOOLBENCH_DEMO_LATENCY_MS": "abc"}, ["TOOLBENCH_DEMO_LATENCY_MS", "'abc'"]),
        ([], {"TOOLBENCH_DEMO_FAILURE_RATE": "-0.1"}, ["TOOLBENCH_DEMO_FAILURE_RATE", "-0.1"]),
    ]
    for flags, environ, words in cases:
        with pytest.raises(SystemExit) as info:
            _settings.FlakySettings.parse(flags, environ)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert all(word in err for word in words), err
    # The same check, end to end: the real command exits before serving anything.
    out = subprocess.run(
        [*demo.command("flaky"), "--failure-rate", "2"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.returncode == 2 and "--failure-rate must be between 0 and 1" in out.stderr


def test_flags_win_over_environment_variables() -> None:
    environ = {"TOOLBENCH_DEMO_LATENCY_MS": "900", "TOOLBENCH_DEMO_SEED": "3"}
    settings = _settings.FlakySettings.parse(["--latency-ms", "5"], environ)
    assert (settings.latency_ms, settings.seed) == (5.0, 3)
    assert _settings.FlakySettings.parse([], {}) == _settings.FlakySettings()


# --- the formulas, checked against GeographicLib --------------------------------------------


def test_formulas_against_karney_on_every_pair_of_cities() -> None:
    geodesic = pytest.importorskip("geographiclib.geodesic").Geodesic.WGS84
    worst = {"vincenty_m": 0.0, "haversine": 0.0, "equirectangular": 0.0, "bearing": 0.0}
    for a, b in itertools.permutations(table(), 2):
        ref = geodesic.Inverse(a.lat, a.lon, b.lat, b.lon)
        ref_km = ref["s12"] / 1000
        km, bearing = _geodesy.vincenty(a.lat, a.lon, b.lat, b.lon)
        worst["vincenty_m"] = max(worst["vincenty_m"], abs(km - ref_km) * 1000)
        worst["bearing"] = max(worst["bearing"], abs((bearing - ref["azi1"] + 180) % 360 - 180))
        for name in ("haversine", "equirectangular"):
            approx = getattr(_geodesy, name)(a.lat, a.lon, b.lat, b.lon)
            worst[name] = max(worst[name], abs(approx - ref_km) / ref_km)
    assert worst["vincenty_m"] < 0.001  # a millimetre
    assert worst["bearing"] < 1e-6
    assert 0.001 < worst["haversine"] < 0.006  # the sphere is off by a few tenths of a percent
    assert worst["equirectangular"] > 0.2  # the flat map is badly wrong somewhere


def test_vincenty_edge_cases() -> None:
    assert _geodesy.vincenty(*LONDON, *LONDON) == (0.0, 0.0)
    equator_km, _ = _geodesy.vincenty(0.0, 0.0, 0.0, 90.0)  # a quarter of the equator
    assert equator_km == pytest.approx(2 * math.pi * _geodesy.WGS84_A_KM / 4, rel=1e-9)
    with pytest.raises(_geodesy.NoConvergence):
        _geodesy.vincenty(0.0, 0.0, 0.5, 179.7)  # nearly antipodal: Vincenty's known limit
    # Crossing the date line takes the short way round.
    assert _geodesy.haversine(0.0, 179.5, 0.0, -179.5) == pytest.approx(111.2, rel=1e-3)


def test_canvas_rejects_silly_sizes() -> None:
    with pytest.raises(ValueError, match="0x10"):
        Canvas(0, 10)


# --- the servers over stdio ------------------------------------------------------------------


@pytest.mark.slow
def test_servers_share_distance_and_describe_their_tools() -> None:
    expected = {
        "geo": {"distance", "city", "cities", "nearest", "world_map"},
        "geo_precise": {"distance", "city", "bearing"},
        "flaky": {"distance", "city", "status", "wait"},
    }

    async def body() -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for name in demo.SERVERS:
            async with connect(name) as client:
                found[name] = {t.name: t for t in (await client.list_tools()).tools}
        return found

    found = run(body)
    for name, tools in found.items():
        assert set(tools) == expected[name]
        for tool in tools.values():
            check_tool_name(tool.name)
            assert tool.description and len(tool.description) > 40, (name, tool.name)
        schema = tools["distance"].input_schema
        assert schema["required"] == ["from_city", "to_city"]
        assert schema["properties"]["unit"]["enum"] == ["km", "mi", "nmi"]
        assert schema["properties"]["unit"]["default"] == "km"
    descriptions = {found[n]["distance"].description for n in demo.SERVERS}
    assert len(descriptions) == 3  # same name, three different methods, each explained


@pytest.mark.slow
def test_distance_differs_between_servers_the_way_it_should() -> None:
    async def body() -> dict[str, dict[str, float]]:
        answers: dict[str, dict[str, float]] = {}
        for name in demo.SERVERS:
            async with connect(name, **CALM) as client:
                answers[name] = {
                    "london_new_york": await distance(client, "London", "New York"),
                    "london_paris": await distance(client, "London", "Paris"),
                    "london_new_york_mi": await distance(client, "London", "New York", "mi"),
                    "sydney_santiago": await distance(client, "Sydney", "Santiago"),
                    "same": await distance(client, "Tokyo", "tokyo"),
                }
        return answers

    got = run(body)
    sphere, ellipsoid, flat = got["geo"], got["geo_precise"], got["flaky"]
    assert ellipsoid["london_new_york"] == pytest.approx(LONDON_NEW_YORK_KM, abs=0.002)
    assert sphere["london_new_york"] == pytest.approx(5570.23, abs=0.01)
    for answer in (sphere, ellipsoid):
        assert answer["london_new_york"] == pytest.approx(LONDON_NEW_YORK_KM, rel=0.01)
    spread = abs(sphere["london_new_york"] - ellipsoid["london_new_york"])
    assert 0.001 < spread / ellipsoid["london_new_york"] < 0.005
    # The flat map is fine across the Channel and wrong by percent across an ocean.
    assert flat["london_paris"] == pytest.approx(ellipsoid["london_paris"], rel=0.005)
    assert flat["london_new_york"] / ellipsoid["london_new_york"] > 1.03
    assert flat["sydney_santiago"] / ellipsoid["sydney_santiago"] > 1.1
    for answer in (sphere, ellipsoid, flat):
        assert answer["same"] == 0.0
        assert answer["london_new_york_mi"] == pytest.approx(
            answer["london_new_york"] / 1.609344, abs=0.001
        )


@pytest.mark.slow
def test_structured_content_matches_each_output_schema() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("city", {"name": "sao paulo"}),
        ("cities", {"country": "Brazil"}),
        ("cities", {}),
        ("nearest", {"city": "Paris", "k": 2, "unit": "nmi"}),
        ("distance", {"from_city": "Lima", "to_city": "Quito"}),
    ]

    async def body() -> tuple[dict[str, Any], list[CallToolResult]]:
        async with connect("geo") as client:
            tools = {t.name: t.output_schema for t in (await client.list_tools()).tools}
            return tools, [await client.call_tool(name, args) for name, args in calls]

    schemas, results = run(body)
    assert schemas["world_map"] is None  # an image tool declares no structured output
    for (name, _), result in zip(calls, results, strict=True):
        assert not result.is_error, text(result)
        assert schemas[name] is not None and result.structured_content is not None
        jsonschema.validate(result.structured_content, schemas[name])
    city, brazil, everything, nearest, _ = (r.structured_content for r in results)
    assert city == {
        "name": "São Paulo", "country": "Brazil", "lat": -23.5505, "lon": -46.6333,
        "population": 12325000,
    }
    assert json.loads(text(results[0])) == city  # the text block is the same JSON
    assert {c["name"] for c in brazil["cities"]} == {"São Paulo", "Rio de Janeiro"}
    assert everything["count"] == len(everything["cities"]) == len(table()) >= 40
    assert [n["name"] for n in nearest["neighbours"]] == ["London", "Berlin"]
    assert nearest["unit"] == "nmi" and nearest["neighbours"][0]["distance"] < 200


def _read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Check a PNG's structure byte by byte; return its size and unfiltered RGB rows."""
    assert data[:8] == PNG_SIGNATURE
    chunks, offset = {}, 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, kind
        chunks[kind] = body
        offset += 12 + length
    assert list(chunks) == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, colour, _, _, _ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour) == (8, 2)  # 8-bit RGB
    raw = zlib.decompress(chunks[b"IDAT"])
    stride = 1 + 3 * width
    assert len(raw) == height * stride
    rows = [raw[i * stride : (i + 1) * stride] for i in range(height)]
    assert all(row[0] == 0 for row in rows)  # filter type 0: the rows are the pixels
    return width, height, [row[1:] for row in rows]


@pytest.mark.slow
def test_world_map_returns_a_png_with_the_route_drawn() -> None:
    async def body() -> tuple[CallToolResult, CallToolResult, CallToolResult]:
        async with connect("geo") as client:
            plain = await client.call_tool("world_map", {"width": 180})
            route = await client.call_tool(
                "world_map", {"from_city": "London", "to_city": "Tokyo", "width": 720}
            )
            bad = await client.call_tool("world_map", {"from_city": "Atlantis", "to_city": "Rome"})
            return plain, route, bad

    plain, route, bad = run(body)
    red = bytes((214, 40, 40))
    for result, size in ((plain, (180, 90)), (route, (720, 360))):
        assert not result.is_error and result.structured_content is None
        [block] = result.content
        assert isinstance(block, ImageContent) and block.mime_type == "image/png"
        width, height, rows = _read_png(base64.b64decode(block.data))
        assert (width, height) == size
        reds = sum(row.count(red) for row in rows)
        assert (reds > 0) == (result is route)
    assert bad.is_error and "'Atlantis'" in text(bad) and "from_city" in text(bad)


@pytest.mark.slow
def test_unknown_names_and_bad_arguments_are_clear_tool_errors() -> None:
    async def body() -> list[CallToolResult]:
        async with connect("geo_precise") as client:
            return [
                await client.call_tool("distance", {"from_city": "Lodnon", "to_city": "Paris"}),
                await client.call_tool("distance", {"from_city": "Paris", "to_city": "Xyzzy"}),
                await client.call_tool("city", {"name": "x" * 100}),
                await client.call_tool("distance", {"from_city": "Paris"}),
                await client.call_tool(
                    "distance", {"from_city": "Rome", "to_city": "Lima", "unit": "ft"}
                ),
                await client.call_tool("bearing", {"from_city": "Rome", "to_city": "rome"}),
                await client.call_tool("bearing", {"from_city": "London", "to_city": "Tokyo"}),
            ]

    typo, nonsense, long_name, missing, bad_unit, same, bearing = run(body)
    for result in (typo, nonsense, long_name, missing, bad_unit, same):
        assert result.is_error
    assert "unknown city 'Lodnon'" in text(typo) and "'from_city'" in text(typo)
    assert "Did you mean 'London'?" in text(typo)
    assert "'Xyzzy'" in text(nonsense) and "'to_city'" in text(nonsense)
    assert "No close match" in text(nonsense) and "`cities`" in text(nonsense)
    assert "x" * 57 + "..." in text(long_name) and "x" * 61 not in text(long_name)
    assert "to_city" in text(missing)
    assert "unit" in text(bad_unit)
    assert "itself" in text(same)
    assert not bearing.is_error and bearing.structured_content == {"result": 31.6894}


# --- the flaky server ------------------------------------------------------------------------


async def _timed_calls(client: Client, count: int) -> list[tuple[bool, float]]:
    outcomes = []
    for _ in range(count):
        start = time.perf_counter()
        result = await client.call_tool("distance", {"from_city": "Rome", "to_city": "Cairo"})
        outcomes.append((result.is_error, time.perf_counter() - start))
        if result.is_error:
            assert "simulated failure of 'distance'" in text(result)
    return outcomes


@pytest.mark.slow
def test_flaky_waits_at_least_its_latency() -> None:
    async def body() -> tuple[list[tuple[bool, float]], dict[str, Any]]:
        async with connect("flaky", latency_ms=300, failure_rate=0) as client:
            outcomes = await _timed_calls(client, 3)
            status = await client.call_tool("status", {})
            assert status.structured_content is not None
            return outcomes, status.structured_content

    outcomes, status = run(body)
    assert [failed for failed, _ in outcomes] == [False] * 3
    assert all(elapsed >= 0.3 for _, elapsed in outcomes), outcomes
    assert status == {
        "latency_ms": 300.0, "jitter_ms": 0.0, "failure_rate": 0.0, "seed": None,
        "calls": 3, "failures": 0,
    }


@pytest.mark.slow
def test_flaky_failure_rate_one_always_fails_and_zero_never() -> None:
    async def body() -> tuple[list[bool], list[bool], CallToolResult]:
        async with connect("flaky", latency_ms=0, failure_rate=1.0) as client:
            always = [failed for failed, _ in await _timed_calls(client, 6)]
            lookup = await client.call_tool("city", {"name": "Lima"})
            status = await client.call_tool("status", {})  # never fails, whatever the rate
            assert not status.is_error and status.structured_content is not None
            assert status.structured_content["failures"] == 7
        async with connect("flaky", latency_ms=0, failure_rate=0.0) as client:
            never = [failed for failed, _ in await _timed_calls(client, 20)]
        return always, never, lookup

    always, never, lookup = run(body)
    assert always == [True] * 6
    assert never == [False] * 20
    assert lookup.is_error and "simulated failure of 'city'" in text(lookup)


@pytest.mark.slow
def test_flaky_seed_repeats_the_failures_whether_set_by_flag_or_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def pattern(**settings: Any) -> list[bool]:
        async with connect("flaky", **settings) as client:
            return [failed for failed, _ in await _timed_calls(client, 24)]

    by_flags = run(lambda: pattern(latency_ms=0, failure_rate=0.5, seed=11))
    monkeypatch.setenv("TOOLBENCH_DEMO_LATENCY_MS", "0")
    monkeypatch.setenv("TOOLBENCH_DEMO_FAILURE_RATE", "0.5")
    monkeypatch.setenv("TOOLBENCH_DEMO_SEED", "11")
    by_env = run(pattern)
    other_seed = run(lambda: pattern(seed=12))  # flags override the environment's seed only
    assert by_flags == by_env
    assert 0 < sum(by_flags) < len(by_flags)  # some fail, some succeed
    assert other_seed != by_flags


@pytest.mark.slow
def test_flaky_latency_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLBENCH_DEMO_LATENCY_MS", "250")
    monkeypatch.setenv("TOOLBENCH_DEMO_JITTER_MS", "50")
    monkeypatch.setenv("TOOLBENCH_DEMO_FAILURE_RATE", "0")

    async def body() -> tuple[list[tuple[bool, float]], dict[str, Any] | None]:
        async with connect("flaky") as client:
            outcomes = await _timed_calls(client, 2)
            return outcomes, (await client.call_tool("status", {})).structured_content

    outcomes, status = run(body)
    assert all(not failed and elapsed >= 0.25 for failed, elapsed in outcomes), outcomes
    assert status is not None
    assert (status["latency_ms"], status["jitter_ms"], status["failure_rate"]) == (250, 50, 0)


@pytest.mark.slow
def test_flaky_wait_reports_progress() -> None:
    seen: list[tuple[float, float | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async def body() -> CallToolResult:
        async with connect("flaky", **CALM) as client:
            return await client.call_tool("wait", {"seconds": 0.3}, progress_callback=progress)

    result = run(body)
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["result"] >= 0.3
    assert seen and seen[-1][0] == seen[-1][1]  # it reached the end
    assert [v for v, _ in seen] == sorted(v for v, _ in seen)

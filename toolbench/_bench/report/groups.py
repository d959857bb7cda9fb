"""A report summed up per server (``by="server"``) and lined up per tool name across servers
(``by="name"``).

Per server: how many tools, what the whole catalog costs, how many errors and warnings, and
the share of all its parameters that have a description (not the mean of the tools' shares:
a tool with twenty parameters weighs twenty times one with one).

Per name: same-named tools side by side, one row per tool name and, for each server, its
tokens, documented share and findings (``tokens.<server>``, ``documented.<server>``,
``findings.<server>``, like a compare frame's ``structured.<field>``). ``cheapest`` and
``best_documented`` name the servers that do best, among two or more that offer the name, and
only when they do better than another one: a tie for all is no one's win.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from toolbench._bench.report.rules import SEVERITIES

if TYPE_CHECKING:
    import pandas as pd

SERVER_COLUMNS = ("server", "tools", "tokens", "tokenizer", "errors", "warnings", "infos",
                  "documented")
NAME_FIELDS = ("tokens", "documented", "findings")


def _count(findings: Any, severity: str) -> int:
    return sum(1 for f in findings or () if isinstance(f, dict) and f.get("severity") == severity)


def _described(documented: Any, parameters: Any) -> int:
    if documented is None or (isinstance(documented, float) and math.isnan(documented)):
        return 0
    return round(float(documented) * int(parameters))


def _joined(values: Iterable[Any]) -> str:
    return ", ".join(sorted({str(v) for v in values}))


def by_server(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per server (:data:`SERVER_COLUMNS`), sorted by server."""
    import pandas as pd

    totals: dict[str, dict[str, Any]] = {}
    for server, tokens, tokenizer, params, documented, findings in zip(
            rows["server"], rows["tokens"], rows["tokenizer"], rows["parameters"],
            rows["documented"], rows["findings"], strict=True):
        entry = totals.setdefault(str(server), {"tools": 0, "tokens": 0, "tokenizer": set(),
                                                "params": 0, "described": 0,
                                                **{s: 0 for s in SEVERITIES}})
        entry["tools"] += 1
        entry["tokens"] += int(tokens)
        entry["tokenizer"].add(tokenizer)
        entry["params"] += int(params)
        entry["described"] += _described(documented, params)
        for severity in SEVERITIES:
            entry[severity] += _count(findings, severity)
    out = [(server, e["tools"], e["tokens"], _joined(e["tokenizer"]), e["error"],
            e["warning"], e["info"],
            e["described"] / e["params"] if e["params"] else math.nan)
           for server, e in sorted(totals.items())]
    frame = pd.DataFrame(out, columns=list(SERVER_COLUMNS))
    frame["documented"] = frame["documented"].astype(float)
    return frame


def by_name(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per tool name: ``tool``, ``servers`` (those offering it), per server
    :data:`NAME_FIELDS`, then ``cheapest`` and ``best_documented`` (lists of servers).
    Names offered by the most servers come first."""
    import pandas as pd

    servers = sorted({str(s) for s in rows["server"]})
    table: dict[str, dict[str, tuple[int, float, list[Any]]]] = {}
    for server, tool, tokens, documented, findings in zip(
            rows["server"], rows["tool"], rows["tokens"], rows["documented"],
            rows["findings"], strict=True):
        table.setdefault(str(tool), {}).setdefault(
            str(server), (int(tokens), float(documented), list(findings or [])))
    out = []
    for tool, offered in sorted(table.items(), key=lambda item: (-len(item[1]), item[0])):
        row: dict[str, Any] = {"tool": tool, "servers": sorted(offered)}
        for field_index, field in enumerate(NAME_FIELDS):
            for server in servers:
                got = offered.get(server)
                row[f"{field}.{server}"] = got[field_index] if got is not None else (
                    None if field == "findings" else math.nan)
        row["cheapest"] = _best({s: v[0] for s, v in offered.items()}, lowest=True)
        row["best_documented"] = _best({s: v[1] for s, v in offered.items()
                                        if not math.isnan(v[1])}, lowest=False)
        out.append(row)
    columns = ["tool", "servers", *(f"{f}.{s}" for f in NAME_FIELDS for s in servers),
               "cheapest", "best_documented"]
    frame = pd.DataFrame(out, columns=columns)
    for server in servers:
        frame[f"tokens.{server}"] = frame[f"tokens.{server}"].astype("Int64")
        frame[f"documented.{server}"] = frame[f"documented.{server}"].astype(float)
    return frame


def _best(values: dict[str, float], lowest: bool) -> list[str]:
    """The servers with the best value, if two or more compete and not all tie."""
    if len(values) < 2:
        return []
    best = min(values.values()) if lowest else max(values.values())
    winners = sorted(s for s, v in values.items() if v == best)
    return winners if len(winners) < len(values) else []

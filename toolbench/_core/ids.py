"""Identity of a tool and of where a call would go.

A tool is named by the operator's local server name plus the tool's own name, never by the
name a server advertises: two copies of one server must stay distinguishable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

SERVER_RULE = "1 to 64 characters of [A-Za-z0-9_.-], starting with a letter or digit"
TOOL_RULE = "1 to 128 characters of [A-Za-z0-9_.-]"
_SERVER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
_TOOL_RE = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_REFERENCE_RE = re.compile(r"tool://([A-Za-z0-9][A-Za-z0-9_.\-]{0,63})/([A-Za-z0-9_.\-]{1,128})")
SCHEME = "tool://"


def is_server_name(value: object) -> bool:
    return isinstance(value, str) and _SERVER_RE.fullmatch(value) is not None


def is_tool_name(value: object) -> bool:
    return isinstance(value, str) and _TOOL_RE.fullmatch(value) is not None


def check_server_name(value: object) -> str:
    """Return ``value`` if it is a valid server name, else raise a ValueError naming the rule."""
    if not is_server_name(value):
        raise ValueError(f"invalid server name {value!r}: a server name is {SERVER_RULE}")
    return value  # type: ignore[return-value]


def check_tool_name(value: object) -> str:
    """Return ``value`` if it is a valid MCP tool name, else raise a ValueError naming the rule."""
    if not is_tool_name(value):
        raise ValueError(f"invalid tool name {value!r}: a tool name is {TOOL_RULE}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True, order=True, slots=True)
class ToolId:
    """One tool on one locally named server; sorts by (server, tool)."""

    server: str
    tool: str

    def __post_init__(self) -> None:
        check_server_name(self.server)
        check_tool_name(self.tool)

    @classmethod
    def of_checked(cls, server: str, tool: str) -> ToolId:
        """A ToolId of names checked already (a listing's, by the pegboard): the same value
        without checking each of 10,000 names again on the shared loop."""
        tool_id = object.__new__(cls)
        object.__setattr__(tool_id, "server", server)
        object.__setattr__(tool_id, "tool", tool)
        return tool_id

    def __str__(self) -> str:
        return f"{self.server}/{self.tool}"

    @property
    def reference(self) -> str:
        return f"{SCHEME}{self.server}/{self.tool}"

    @classmethod
    def parse(cls, reference: object) -> ToolId | None:
        """Read exactly ``tool://server/tool``; anything else is ``None``, never a guess."""
        if not isinstance(reference, str):
            return None
        match = _REFERENCE_RE.fullmatch(reference)
        if match is None:
            return None
        return cls(match.group(1), match.group(2))


@dataclass(frozen=True, slots=True)
class Destination:
    """Where a call travels: LOCAL (in process, stdio child) or a remote network host."""

    host: str | None = None
    LOCAL: ClassVar[Destination]

    @classmethod
    def remote(cls, host: str) -> Destination:
        """A network destination: ``host`` lowercased (what ``Egress`` judges).

        Raises:
            ValueError: ``host`` is not a non-empty string.
        """
        if not isinstance(host, str) or not host.strip():
            raise ValueError(f"invalid remote host {host!r}: a host is a non-empty string")
        return cls(host.strip().lower())

    @property
    def is_local(self) -> bool:
        return self.host is None

    def __str__(self) -> str:
        return "local" if self.host is None else self.host


Destination.LOCAL = Destination(None)


class Egress:
    """An allowlist of remote hosts; exact, lowercase, no wildcards, no 'allow all'."""

    __slots__ = ("_hosts",)

    def __init__(self, hosts: Iterable[str]) -> None:
        if isinstance(hosts, (str, bytes)):
            raise TypeError(
                f"Egress takes an iterable of host names, not a single string {hosts!r}; "
                f"write Egress([{hosts!r}])"
            )
        checked: set[str] = set()
        for host in hosts:
            if not isinstance(host, str):
                kind = type(host).__name__
                raise TypeError(f"egress host {host!r} is a {kind}; hosts are strings")
            if not host.strip() or "*" in host:
                raise ValueError(
                    f"egress host {host!r} is not allowed: a host is an exact non-empty name, "
                    "with no wildcards"
                )
            checked.add(host.strip().lower())
        self._hosts = frozenset(checked)

    @property
    def hosts(self) -> frozenset[str]:
        return self._hosts

    def allows(self, destination: Destination) -> bool:
        """LOCAL is never judged; a remote host must be listed exactly."""
        return destination.host is None or destination.host in self._hosts

    def refusal(self, destination: Destination) -> str:
        """Why a connect or call to ``destination`` was refused: one wording everywhere."""
        return (f"egress refused: host {destination.host!r} is not in the allowlist "
                f"{sorted(self._hosts)}; nothing was sent")

    def __contains__(self, host: object) -> bool:
        return isinstance(host, str) and host.lower() in self._hosts

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._hosts))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Egress) and other._hosts == self._hosts

    def __hash__(self) -> int:
        return hash(self._hosts)

    def __repr__(self) -> str:
        return f"Egress({sorted(self._hosts)!r})"


_PROVENANCE_FIELDS = ("run", "case", "effect", "dispatch", "agent")


_JSON_SCALARS = frozenset({str, int, bool, type(None)})


class Provenance:
    """Who or what asked for a call; travels in MCP ``_meta`` and stays in every record."""

    __slots__ = ("_fields",)
    META_KEY = "toolbench/provenance"

    def __init__(
        self,
        *,
        run: str | None = None,
        case: Any = None,
        effect: str | None = None,
        dispatch: str | None = None,
        agent: str | None = None,
        **extra: Any,
    ) -> None:
        fields: dict[str, Any] = {
            "run": run, "case": case, "effect": effect, "dispatch": dispatch, "agent": agent
        }
        fields.update(extra)
        self._fields = {k: v for k, v in fields.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Provenance:
        """Provenance from a plain mapping (``None`` gives an empty one).

        Raises:
            TypeError: ``data`` is not a mapping, or a value is not JSON-like.
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise TypeError(f"provenance must be a mapping or Provenance, not {data!r}")
        bad = [k for k in data if not isinstance(k, str)]
        if bad:
            raise TypeError(f"provenance keys must be strings, not {bad[0]!r}")
        return cls(**dict(data))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._fields[name]
        except KeyError:
            if name in _PROVENANCE_FIELDS:
                return None
            raise AttributeError(name) from None

    def with_fields(self, **fields: Any) -> Provenance:
        """A copy with ``fields`` added; the caller's own values win over defaults given here."""
        merged = {k: v for k, v in fields.items() if v is not None}
        if not merged:
            return self  # immutable: nothing to add, nothing to copy
        merged.update(self._fields)
        return Provenance(**merged)

    def with_case(self, case: Any) -> Provenance:
        """``with_fields(case=case)`` for a batch's many calls: the same result (a ``case``
        already given wins), without the keyword round trip (a ``map`` makes one per case)."""
        if case is None or "case" in self._fields:
            return self
        made = Provenance.__new__(Provenance)
        made._fields = {"case": case, **self._fields}
        return made

    def as_dict(self) -> dict[str, Any]:
        """The fields as a new plain dict (what records and the journal store)."""
        return dict(self._fields)

    def as_meta(self) -> dict[str, Any] | None:
        """The request's MCP ``_meta`` (``None`` when there is nothing to say). Only JSON can
        travel, so a value that is not JSON goes as its string form rather than failing."""
        if not self._fields:
            return None
        fields = dict(self._fields)
        if all(type(v) in _JSON_SCALARS for v in fields.values()):  # the usual case: as is
            return {self.META_KEY: fields}
        return {self.META_KEY: json.loads(json.dumps(fields, default=str))}

    def __bool__(self) -> bool:
        return bool(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Provenance) and other._fields == self._fields

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self._fields.items())))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"Provenance({inner})"


def did_you_mean(name: str, offered: Iterable[str], *, tail: str = "") -> str:
    """``"; did you mean 'a', 'b'?"`` for the names closest to ``name`` (``tail`` is added
    to each), or ``""``: the one hint every unknown-name error ends with."""
    import difflib

    close = difflib.get_close_matches(name, list(offered), n=3)
    return f"; did you mean {', '.join(repr(c + tail) for c in close)}?" if close else ""

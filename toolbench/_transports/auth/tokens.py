"""Where OAuth tokens and client registrations live: one record per (issuer, resource).

The SDK's ``OAuthClientProvider`` reads and writes through a ``TokenStorage`` (four async
methods, no issuer argument). :class:`Storage` is that, for one MCP server URL (the
*resource*), over a place: :class:`FileStore` (the default: a folder under the user's data
directory) or :class:`MemoryStore` (``store="memory"``: this process only).

- **Keyed by issuer.** A record belongs to the authorization server that registered its client
  (``client_info.issuer``, which the SDK stamps). The newest record of a resource is the one in
  use; when the SDK re-registers with another issuer (the server moved), a new record starts, so
  credentials never travel from one authorization server to another.
- **Files** (``FileStore``): ``<data>/oauth/<sha(resource)>-<sha(issuer)>.json``; the folder is
  0700 and the files 0600; a write goes to a temporary file then ``os.replace``; nothing is
  opened through a symbolic link (``O_NOFOLLOW``) and anything but a regular file is refused;
  a file over ``MAX_RECORD_BYTES`` is refused; a file that is not a record (corrupt JSON) is
  set aside for a fresh sign-in, with a warning. ``TOOLBENCH_DATA_DIR`` overrides the folder.
- **Expiry.** A token's ``expires_in`` is relative; the record keeps the absolute time, and a
  token read back carries the seconds that are left.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from toolbench._core.files import (
    NotRegularFile,
    SymlinkRefused,
    TooLarge,
    UnsafeFile,
    read_capped,
    write_atomic,
)

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "TOOLBENCH_DATA_DIR"
"""Overrides the folder that holds ``oauth/`` (tests, sandboxes)."""
MAX_RECORD_BYTES = 256 * 1024
"""The largest token record read or written (a real one is a few kB)."""
MAX_TOKEN_CHARS = 16 * 1024
"""The longest access or refresh token accepted from an authorization server."""
NO_ISSUER = ""
"""The issuer of a record made before any issuer is known (a pre-registered client)."""


class TokenStoreError(Exception):
    """The token store cannot be used as it is (a symbolic link, a FIFO, a folder that is not
    private); the message names the path and what to do."""


@dataclass
class Record:
    """One (issuer, resource)'s client registration and tokens, as stored."""

    resource: str
    issuer: str
    client_info: dict[str, Any] | None = None
    tokens: dict[str, Any] | None = None
    expires_at: float | None = None
    updated: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"version": 1, "resource": self.resource, "issuer": self.issuer,
                "client_info": self.client_info, "tokens": self.tokens,
                "expires_at": self.expires_at, "updated": self.updated}

    @classmethod
    def from_json(cls, data: object) -> Record:
        if not isinstance(data, dict) or data.get("version") != 1:
            raise ValueError("not a toolbench token record (version 1)")
        resource, issuer = data.get("resource"), data.get("issuer")
        if not isinstance(resource, str) or not isinstance(issuer, str):
            raise ValueError("a token record names its resource and issuer")
        client_info, tokens = data.get("client_info"), data.get("tokens")
        expires_at, updated = data.get("expires_at"), data.get("updated", 0.0)
        if client_info is not None and not isinstance(client_info, dict):
            raise ValueError("client_info is not an object")
        if tokens is not None and not isinstance(tokens, dict):
            raise ValueError("tokens is not an object")
        if expires_at is not None and not isinstance(expires_at, int | float):
            raise ValueError("expires_at is not a number")
        if not isinstance(updated, int | float):
            raise ValueError("updated is not a number")
        return cls(resource, issuer, client_info, tokens,
                   None if expires_at is None else float(expires_at), float(updated))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class MemoryStore:
    """Records kept in this process only (``store="memory"``), shared by every bench in it."""

    kind = "memory"
    _records: ClassVar[dict[tuple[str, str], Record]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def load(self, resource: str) -> list[Record]:
        with self._lock:
            return [Record(**vars(r)) for (res, _), r in self._records.items() if res == resource]

    def save(self, record: Record) -> None:
        with self._lock:
            self._records[(record.resource, record.issuer)] = Record(**vars(record))

    def forget(self, resource: str) -> int:
        with self._lock:
            keys = [k for k in self._records if k[0] == resource]
            for key in keys:
                del self._records[key]
            return len(keys)


def default_folder() -> Path:
    """``$TOOLBENCH_DATA_DIR/oauth``, else ``platformdirs.user_data_dir("toolbench")/oauth``."""
    base = os.environ.get(DATA_DIR_ENV)
    if not base:
        import platformdirs

        base = platformdirs.user_data_dir("toolbench")
    return Path(base) / "oauth"


class FileStore:
    """One JSON file per (issuer, resource) in a private folder (see the module docstring)."""

    kind = "file"

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self._folder = Path(folder) if folder is not None else None

    @property
    def folder(self) -> Path:
        return self._folder if self._folder is not None else default_folder()

    def path(self, resource: str, issuer: str) -> Path:
        return self.folder / f"{_digest(resource)}-{_digest(issuer)}.json"

    def _ready_folder(self) -> Path:
        folder = self.folder
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            raise TokenStoreError(f"token folder {folder} is not a plain folder (a symbolic "
                                  "link?); toolbench keeps tokens only in a folder of its own")
        if info.st_mode & 0o077:
            os.chmod(folder, 0o700)
        return folder

    def load(self, resource: str) -> list[Record]:
        folder = self.folder
        if not folder.is_dir():
            return []
        found = []
        for path in sorted(folder.glob(f"{_digest(resource)}-*.json")):
            record = self._read(path)
            if record is not None and record.resource == resource:
                found.append(record)
        return found

    def _read(self, path: Path) -> Record | None:
        try:
            data = read_capped(path, MAX_RECORD_BYTES)
        except FileNotFoundError:
            return None
        except SymlinkRefused:
            raise TokenStoreError(f"token file {path} is a symbolic link; toolbench never "
                                  "reads or writes tokens through one: remove it") from None
        except NotRegularFile:
            raise TokenStoreError(f"token file {path} is not a regular file (a FIFO, a "
                                  "device?); remove it") from None
        except TooLarge as exc:
            raise TokenStoreError(f"token file {path} is {exc.size:,} bytes, over the "
                                  f"{MAX_RECORD_BYTES:,}-byte cap; remove it") from None
        except OSError as exc:
            raise TokenStoreError(f"token file {path} cannot be read: {exc.strerror}") from None
        try:
            return Record.from_json(json.loads(data))
        except ValueError as exc:  # corrupt: set aside, sign in afresh
            logger.warning("token file %s is not a toolbench token record (%s); it is "
                           "ignored and a fresh sign-in will replace it", path, exc)
            return None

    def save(self, record: Record) -> None:
        self._ready_folder()
        path = self.path(record.resource, record.issuer)
        data = json.dumps(record.as_json()).encode()
        if len(data) > MAX_RECORD_BYTES:
            raise TokenStoreError(f"a token record of {len(data):,} bytes is over the "
                                  f"{MAX_RECORD_BYTES:,}-byte cap; not stored")
        try:
            write_atomic(path, data)
        except UnsafeFile:
            raise TokenStoreError(f"token file {path} is not a regular file (a symbolic "
                                  "link, a FIFO?); toolbench will not replace it: remove it"
                                  ) from None

    def forget(self, resource: str) -> int:
        folder = self.folder
        if not folder.is_dir():
            return 0
        count = 0
        for path in folder.glob(f"{_digest(resource)}-*.json"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                count += 1
        return count


Place = FileStore | MemoryStore


class Storage:
    """The SDK's ``TokenStorage`` for one resource over a place, keyed by issuer.

    ``fixed_client`` is a pre-registered client (``OAuth(client_id=...)``), used whatever the
    store holds. ``on_tokens`` hears of every token set (the caller hides their values and
    shows the expiry); it may raise to refuse them (an oversized token).
    """

    def __init__(self, resource: str, place: Place, *,
                 fixed_client: OAuthClientInformationFull | None = None,
                 on_tokens: Callable[[OAuthToken], None] | None = None) -> None:
        self.resource = resource
        self.place = place
        self._fixed = fixed_client
        self._on_tokens = on_tokens
        self._current: Record | None = None
        self._loaded = False

    def current(self) -> Record | None:
        """The record in use: the newest of this resource (loaded on first use)."""
        if not self._loaded:
            records = self.place.load(self.resource)
            self._current = max(records, key=lambda r: r.updated) if records else None
            self._loaded = True
        return self._current

    @property
    def expires_at(self) -> float | None:
        record = self.current()
        return record.expires_at if record is not None and record.tokens else None

    @property
    def has_tokens(self) -> bool:
        record = self.current()
        return bool(record is not None and record.tokens)

    @property
    def issuer(self) -> str | None:
        record = self.current()
        return record.issuer or None if record is not None else None

    def _save(self, record: Record) -> None:
        record.updated = max(time.time(), record.updated + 1e-6)
        self.place.save(record)
        self._current = record

    async def get_tokens(self) -> OAuthToken | None:
        record = self.current()
        if record is None or not record.tokens:
            return None
        try:
            token = OAuthToken.model_validate(record.tokens)
        except ValueError:
            return None
        if record.expires_at is not None:  # the seconds left, so the SDK refreshes when due
            token.expires_in = max(0, int(record.expires_at - time.time()))
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        for value in (tokens.access_token, tokens.refresh_token):
            if value is not None and len(value) > MAX_TOKEN_CHARS:
                raise TokenStoreError(
                    f"the authorization server sent a token of {len(value):,} characters, over "
                    f"the {MAX_TOKEN_CHARS:,}-character cap; it is not used")
        if self._on_tokens is not None:
            self._on_tokens(tokens)
        record = self.current() or Record(self.resource, NO_ISSUER)
        record.tokens = tokens.model_dump(mode="json", exclude_none=True)
        record.expires_at = (time.time() + tokens.expires_in
                             if tokens.expires_in is not None else None)
        self._save(record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._fixed is not None:
            return self._fixed
        record = self.current()
        if record is None or record.client_info is None:
            return None
        try:
            return OAuthClientInformationFull.model_validate(record.client_info)
        except ValueError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        issuer = client_info.issuer or NO_ISSUER
        record = self.current()
        if record is None or record.issuer != issuer:  # another authorization server: anew
            record = Record(self.resource, issuer)
        record.client_info = client_info.model_dump(mode="json", exclude_none=True)
        self._save(record)

    def redirect_uri(self) -> str | None:
        """The redirect URI the stored registration was made with (its loopback port)."""
        record = self.current()
        uris = (record.client_info or {}).get("redirect_uris") if record is not None else None
        return str(uris[0]) if isinstance(uris, list) and uris else None

"""VS Code's ``${input:id}``: a value the person types when a server starts.

VS Code asks for an input the first time a server that uses it starts, and keeps a
``"password": true`` one in its secret storage. toolbench asks the same way:

- ``load_config(..., inputs={"id": "value"})`` answers from the caller (a script's way);
- in a notebook the ask form shows (``toolbench._notebook.ask.inputs``, registered on import
  through :func:`register_input_asker`), during a plain blocking ``load_config``, through the
  cell-side pump; a password input is a password box, emptied once read;
- anywhere else a ``ConfigError`` names each input id still unanswered, and nothing starts.

Answers only ever live in the config's ``environ`` overlay (``servers.config.ClientConfig``):
they expand like ``${VAR}`` values, so they are secrets wherever they land (args, env, URL,
headers) and never appear in a table, repr, record or error. Nothing is written anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from toolbench._bench.clients.formats import Translated
from toolbench._bench.servers.config import ConfigError
from toolbench._loop import get_loop
from toolbench._transports.server_requests import HandlerError

INPUT_TIMEOUT_S = 300.0
"""How long a person may take over the inputs of one config (each is asked in turn)."""


@dataclass(frozen=True)
class InputPrompt:
    """One VS Code input as a person is asked it (the declaration's own words, untrusted:
    the widget escapes them)."""

    id: str
    source: str
    description: str
    password: bool
    default: str | None
    options: tuple[str, ...]
    """A ``pickString`` input's choices (empty for ``promptString``)."""


class InputAsker(Protocol):
    """What asks a person for an input (the notebook layer's ask form)."""

    def available(self) -> str | None:
        """None when a person can be asked here; else why not."""
        ...

    def prepare(self) -> None:
        """Get ready before the caller blocks (install the cell-side pump)."""
        ...

    async def ask_input(self, prompt: InputPrompt) -> str:
        """The person's answer; raises if they cancel."""
        ...


_asker: InputAsker | None = None


def register_input_asker(asker: InputAsker | None) -> None:
    """Install what asks for inputs (the notebook layer does, on import); None removes it."""
    global _asker
    _asker = asker


def prompt_of(ident: str, declared: Mapping[str, Any], source: str) -> InputPrompt:
    """An input's declaration as a prompt; a ``command`` input (VS Code runs an extension's
    command for it) cannot be asked and is a ``ConfigError`` naming it."""
    kind = declared.get("type", "promptString")
    if kind not in ("promptString", "pickString"):
        raise ConfigError(source, f"$.inputs[{ident!r}]", f"input {ident!r} is of type "
                          f"{kind!r}, which only VS Code can answer; pass "
                          f"inputs={{{ident!r}: ...}}")
    options = tuple(str(o.get("value", o.get("label", "")) if isinstance(o, dict) else o)
                    for o in declared.get("options") or () if o is not None)
    default = declared.get("default")
    return InputPrompt(ident, source, str(declared.get("description") or ident),
                       bool(declared.get("password", False)),
                       None if default is None else str(default), options)


def answer_inputs(translated: Translated, given: Mapping[str, str] | None, *,
                  ask: bool = True) -> dict[str, str]:
    """The ``environ`` overlay: each placeholder's answer, from ``given`` or (``ask``) a
    person."""
    given = dict(given or {})
    answers: dict[str, str] = {}
    missing: list[str] = []
    for ident, placeholder in translated.placeholders.items():
        if ident in given:
            if not isinstance(given[ident], str):
                raise TypeError(f"inputs[{ident!r}] must be a str, not "
                                f"{type(given[ident]).__name__}")
            answers[placeholder] = given[ident]
        else:
            missing.append(ident)
    if not missing:
        return answers
    why = ("toolbench's notebook layer is not loaded" if _asker is None else
           "aload_config and the toolbench command do not ask" if not ask else _asker.available())
    if why is not None or _asker is None:
        names = ", ".join(repr(i) for i in missing)
        raise ConfigError(translated.source, "$.inputs", f"the servers use inputs {names}, "
                          f"which VS Code asks a person for; nobody can be asked here ({why})"
                          f": pass load_config(..., inputs={{{missing[0]!r}: ...}}), or "
                          f"--input {missing[0]}=... to the toolbench command")
    asker = _asker
    asker.prepare()
    prompts = [prompt_of(i, translated.inputs[i], translated.source) for i in missing]

    async def ask_all() -> list[str]:
        import anyio

        with anyio.fail_after(INPUT_TIMEOUT_S):
            return [await asker.ask_input(prompt) for prompt in prompts]

    try:
        values = get_loop().run(ask_all)
    except TimeoutError:
        raise ConfigError(translated.source, "$.inputs", f"no answer to the inputs within "
                          f"{INPUT_TIMEOUT_S:g} s; nothing was started") from None
    except HandlerError as exc:
        raise ConfigError(translated.source, "$.inputs", f"{exc}; nothing was started"
                          ) from None
    for ident, value in zip(missing, values, strict=True):
        answers[translated.placeholders[ident]] = value
    return answers

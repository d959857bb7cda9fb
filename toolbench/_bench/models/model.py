"""The model function: what toolbench asks, what it takes back, and a scripted stand-in.

toolbench ships no model. A model is the user's function ``model(messages, tools)`` in the
OpenAI chat format (the one LiteLLM, any-llm and local OpenAI-compatible servers speak),
sync or async, returning the assistant's next message: a dict, or the object the ``openai``
client returns (``response.choices[0].message``), optionally wrapped in :class:`Reply` to
carry token usage. :func:`ask` calls it once, bounded in time, and turns whatever came back
into a :class:`Turn`: text, tool calls with their arguments parsed (or the reason they could
not be), and the assistant message as a plain dict for the transcript. Anything a model does
wrong becomes :class:`ModelFailed` with a sentence a person can act on; the run that asked
ends with that sentence as its ``error``.

:class:`ScriptedModel` is offline and deterministic, for notebooks on Binder and for tests.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "ModelFailed",
    "Reply",
    "ScriptedModel",
    "ToolCall",
    "Turn",
    "ask",
    "model_name",
]

MAX_ARGUMENT_BYTES = 1_000_000
"""The most a model may send as one tool call's arguments (JSON text). A model that asks for
a 50 MB argument is refused before the text is parsed, let alone sent to a server."""

_SHOWN_CHARS = 200  # how much of a strange reply an error quotes
_TOO_DEEP = "not JSON: nested too deeply to read"


@dataclass(frozen=True)
class Reply:
    """A model's reply with what it cost: ``tb.Reply(message, usage={"input": n, "output": m})``.

    ``message`` is what the model function would have returned alone (a dict, or an object
    with ``content`` and ``tool_calls``). Token usage rides beside it because the message
    formats have no place for it.
    """

    message: Any
    usage: Mapping[str, int] | None = None


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model made it, its arguments parsed when they could be."""

    id: str
    name: str
    """The name the model used (provider-facing; a spec's ``names`` maps it back)."""
    arguments: dict[str, Any] | None
    """Parsed; ``None`` when they could not be (``problem`` says why)."""
    raw_arguments: str
    """As the model sent them (JSON text), cut to ``MAX_ARGUMENT_BYTES`` when over it."""
    problem: str | None
    """Why the arguments cannot be used ("not JSON: ...", "not an object", "over N bytes")."""


@dataclass(frozen=True)
class Turn:
    """One model reply, normalized."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    message: dict[str, Any]
    """The assistant message as an OpenAI-format dict, for the transcript."""
    usage: Mapping[str, int] | None
    model_ms: float


class ModelFailed(Exception):
    """The model could not give a usable reply; ``reason`` says what happened, in a sentence.

    Internal: a run catches it and ends with ``stopped="error"`` and ``error=reason``.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


async def ask(model: Callable[..., Any], messages: list[dict[str, Any]],
              tools: list[dict[str, Any]], *, timeout: float) -> Turn:
    """Ask ``model`` for its next message and normalize it; :class:`ModelFailed` otherwise.

    An async model is awaited here; a sync one runs in a worker thread, so a slow model never
    holds up the shared loop (other cells' calls, other runs). Either is bounded by
    ``timeout`` seconds; a sync model still running then is left to finish on its own (a
    thread cannot be stopped), and its answer is dropped. The model gets its own copies of
    the lists, so it cannot rewrite the transcript behind the run's back.
    """
    started = time.perf_counter()
    conversation, offered = list(messages), list(tools)
    bound = asyncio.timeout(timeout)
    try:
        async with bound:
            if getattr(model, "runs_inline", False) is True:
                answer = model(conversation, offered)  # a scripted list: no user code runs
            elif _is_async(model):
                answer = await model(conversation, offered)
            else:
                answer = await anyio.to_thread.run_sync(
                    functools.partial(model, conversation, offered), abandon_on_cancel=True)
            if inspect.isawaitable(answer):  # a sync function that handed back a coroutine
                answer = await answer
    except TimeoutError as exc:
        if not bound.expired():  # the model's own timeout (a provider's), not ours
            raise ModelFailed(f"the model raised {type(exc).__name__}: {exc}") from exc
        raise ModelFailed(f"no reply within {timeout:g} s (model_timeout)") from exc
    except ModelFailed:
        raise
    except Exception as exc:  # the user's code: anything it raises ends the run, named
        raise ModelFailed(f"the model raised {type(exc).__name__}: {exc}") from exc
    model_ms = (time.perf_counter() - started) * 1000
    return normalize(answer, model_ms=model_ms)


def normalize(answer: Any, *, model_ms: float = 0.0) -> Turn:
    """A model's answer (a message dict or object, a :class:`Reply`, or plain text) as a
    :class:`Turn`; :class:`ModelFailed` when it holds neither text nor tool calls."""
    usage: Mapping[str, int] | None = None
    if isinstance(answer, Reply):
        usage = _usage(answer.usage)
        answer = answer.message
    if isinstance(answer, str):
        answer = {"role": "assistant", "content": answer}
    content = _field(answer, "content")
    text = _text(content)
    if text is None:
        refusal = _field(answer, "refusal")
        text = refusal if isinstance(refusal, str) and refusal else None
    raw_calls = _field(answer, "tool_calls")
    if raw_calls is not None and (isinstance(raw_calls, str | bytes)
                                   or not isinstance(raw_calls, Sequence)):
        raise ModelFailed(f"the reply's tool_calls is not a list: {_short(raw_calls)}")
    calls = tuple(_tool_call(raw, index) for index, raw in enumerate(raw_calls or ()))
    if text is None and not calls:
        raise ModelFailed(f"the reply has neither text nor tool calls: {_short(answer)}")
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.raw_arguments}}
            for call in calls]
    return Turn(text=text, tool_calls=calls, message=message, usage=usage, model_ms=model_ms)


def model_name(model: Any) -> str:
    """The model's name for provenance and display: a ``name`` it carries (a ScriptedModel's,
    an adapter's ``"openai:gpt-4o"``), else the function's qualified name."""
    name = getattr(model, "name", None)
    if isinstance(name, str) and name:
        return name
    while isinstance(model, functools.partial):
        model = model.func
    qualname = getattr(model, "__qualname__", None)
    if isinstance(qualname, str) and qualname:
        return qualname
    return type(model).__qualname__


class ScriptedModel:
    """A model that says what it was told to: offline, deterministic, for notebooks and tests.

    ``ScriptedModel([reply, reply, ...])`` answers the n-th time it is asked within one
    conversation with the n-th reply (it counts the assistant messages already in
    ``messages``, so one script serves any number of runs, concurrently). A reply is a string
    (a final answer), an OpenAI-format message dict, a :class:`Reply`, or a shorthand tool
    call ``{"tool": "geo-distance", "arguments": {...}}`` (a list of those is one reply with
    several calls). ``ScriptedModel(function)`` calls ``function(messages, tools)`` instead and
    takes the same kinds of reply from it. A conversation that outlasts the script ends its
    run with an error that says so.
    """

    def __init__(self, script: Sequence[Any] | Callable[..., Any], *,
                 name: str = "scripted") -> None:
        if callable(script):
            self._function: Callable[..., Any] | None = script
            self._replies: tuple[Any, ...] = ()
        elif isinstance(script, Sequence) and not isinstance(script, str | bytes):
            self._function = None
            self._replies = tuple(script)
        else:
            raise TypeError(f"ScriptedModel takes a list of replies or a function(messages, "
                            f"tools), not {type(script).__name__}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"ScriptedModel name must be a non-empty string, not {name!r}")
        self.name = name

    @property
    def runs_inline(self) -> bool:
        """True when the script is a list: answering runs no user code, so :func:`ask` may
        answer on the loop without a worker thread."""
        return self._function is None

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        step = sum(1 for message in messages if _field(message, "role") == "assistant")
        if self._function is not None:
            return _expand(self._function(messages, tools), step)
        if step >= len(self._replies):
            raise ModelFailed(f"ScriptedModel {self.name!r} has no reply left: it holds "
                              f"{len(self._replies)} and was asked for reply {step + 1}")
        return _expand(self._replies[step], step)

    def __repr__(self) -> str:
        kind = "function" if self._function is not None else f"{len(self._replies)} replies"
        return f"ScriptedModel({self.name!r}, {kind})"


def _expand(reply: Any, step: int) -> Any:
    """A shorthand tool call (or a list of them) as an OpenAI assistant message."""
    usage = None
    if isinstance(reply, Reply):
        usage, reply = reply.usage, reply.message
    shorthand = [reply] if isinstance(reply, Mapping) and "tool" in reply else reply
    if isinstance(shorthand, list) and shorthand and all(
            isinstance(item, Mapping) and "tool" in item for item in shorthand):
        reply = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{step + 1}_{index + 1}", "type": "function",
             "function": {"name": item["tool"], "arguments": item.get("arguments", {})}}
            for index, item in enumerate(shorthand)]}
    return reply if usage is None else Reply(reply, usage=usage)


def _is_async(model: Any) -> bool:
    """An ``async def`` function, or an object whose ``__call__`` is one (an adapter)."""
    call = type(model).__call__ if not inspect.isroutine(model) else None
    return inspect.iscoroutinefunction(model) or inspect.iscoroutinefunction(call)


def _field(obj: Any, key: str) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` for an object (the openai client's types)."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _text(content: Any) -> str | None:
    """Message content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content or None
    if isinstance(content, Sequence) and not isinstance(content, bytes):
        parts = [part_text for part in content
                 if isinstance(part_text := _field(part, "text"), str)]
        return "".join(parts) or None
    return None


def _tool_call(raw: Any, index: int) -> ToolCall:
    function = _field(raw, "function")
    name = _field(function, "name") if function is not None else _field(raw, "name")
    arguments = (_field(function, "arguments") if function is not None
                 else _field(raw, "arguments"))
    call_id = _field(raw, "id")
    call_id = call_id if isinstance(call_id, str) and call_id else f"call_{index + 1}"
    if not isinstance(name, str):
        return ToolCall(call_id, "" if name is None else str(name), None,
                        _raw_text(arguments), "the tool call has no name")
    parsed, raw_text, problem = parse_arguments(arguments)
    return ToolCall(call_id, name, parsed, raw_text, problem)


def parse_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str, str | None]:
    """(parsed, JSON text, problem) for arguments sent as JSON text or as an object."""
    if arguments is None or arguments == "":
        return {}, "{}", None  # a call without arguments; some servers send "" for it
    if isinstance(arguments, str | bytes | bytearray):
        raw = arguments if isinstance(arguments, str) else bytes(arguments).decode(
            "utf-8", "replace")
        if len(raw) > MAX_ARGUMENT_BYTES or len(raw.encode("utf-8")) > MAX_ARGUMENT_BYTES:
            return None, raw[:MAX_ARGUMENT_BYTES], _over(len(raw.encode("utf-8")))
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            return None, raw, f"not JSON: {exc}"
        except RecursionError:  # a million bytes of "[": the parser's depth, not ours
            return None, raw, _TOO_DEEP
        if not isinstance(parsed, dict):
            return None, raw, f"not an object: {type(parsed).__name__}"
        return parsed, raw, None
    if isinstance(arguments, Mapping):
        try:
            raw = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return None, _short(arguments), f"not JSON: {exc}"
        except RecursionError:
            return None, _short(arguments), _TOO_DEEP
        if len(raw.encode("utf-8")) > MAX_ARGUMENT_BYTES:
            return None, raw[:MAX_ARGUMENT_BYTES], _over(len(raw.encode("utf-8")))
        return dict(arguments), raw, None
    return None, _short(arguments), f"not an object: {type(arguments).__name__}"


def _over(size: int) -> str:
    return f"over {MAX_ARGUMENT_BYTES:,} bytes ({size:,} bytes)"


def _raw_text(arguments: Any) -> str:
    return arguments[:MAX_ARGUMENT_BYTES] if isinstance(arguments, str) else _short(arguments)


def _usage(usage: Mapping[str, Any] | None) -> Mapping[str, int] | None:
    """``{"input": n, "output": m}`` from the keys providers use for them."""
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        raise ModelFailed(f"the reply's usage is not a mapping: {_short(usage)}")
    aliases = {"input": ("input", "input_tokens", "prompt_tokens"),
               "output": ("output", "output_tokens", "completion_tokens")}
    found: dict[str, int] = {}
    for key, names in aliases.items():
        for alias in names:
            value = usage.get(alias)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                found[key] = value
                break
    return found or None


def _short(value: Any) -> str:
    try:
        shown = repr(value)
    except Exception:  # nested past the recursion limit, or a repr that raises
        return f"<a {type(value).__name__} that cannot be shown>"
    return shown if len(shown) <= _SHOWN_CHARS else shown[:_SHOWN_CHARS] + "…"

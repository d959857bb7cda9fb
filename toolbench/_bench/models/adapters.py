"""Provider adapters: a model function over an official client (``openai``, ``anthropic``).

toolbench calls no provider by itself; these wrap a client the user made (with their key,
their base URL, their retries) into the bench's model function, ``model(messages, tools)`` in
the OpenAI chat format, returning a ``Reply`` with the provider's token usage.

- ``openai(client, model=...)`` passes the conversation as it is to
  ``client.chat.completions.create`` (any OpenAI-compatible server works the same way).
- ``anthropic(client, model=...)`` converts both ways for the Messages API: system messages
  become ``system``, an assistant's ``tool_calls`` become ``tool_use`` blocks, tool messages
  become ``tool_result`` blocks in one user turn, tools get ``input_schema``; the reply's text
  and ``tool_use`` blocks come back as an OpenAI-format assistant message.

Each is async for an async client and sync for a sync one (the run puts a sync model in a
worker thread). A provider's failure (an HTTP error after the client's own retries, a lost
connection, a reply without choices or content) raises :class:`ProviderError`, whose message
says which model, what status and what the provider said; a run turns it into its ``error``.
The client packages are optional extras, imported only when an adapter is made.

An adapter holds its client, which does not pickle (it keeps locks and a connection pool), so
``bench.evaluate(..., cluster=)`` refuses it up front; on a cluster, pass a module's function
that makes its client (and adapter) on the worker, once, and calls it.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from toolbench._bench.models.model import Reply

MAX_SHOWN = 500
"""Characters of a provider's error message or odd reply quoted in a ``ProviderError``."""


class ProviderError(Exception):
    """A provider failed to answer: an HTTP error, a lost connection, or a reply the adapter
    cannot read. ``model`` names the adapter (``"openai:gpt-4o"``), ``status`` the HTTP
    status when there was one."""

    def __init__(self, message: str, *, model: str, status: int | None = None) -> None:
        self.model = model
        self.status = status
        super().__init__(f"{model}: {message}")


def openai(client: Any, model: str = "gpt-4o", **params: Any) -> Callable[..., Any]:
    """A model function over an ``openai`` client (``OpenAI`` or ``AsyncOpenAI``, or any
    OpenAI-compatible server through its ``base_url``).

    Each step calls ``client.chat.completions.create(model=model, messages=messages,
    tools=tools, **params)`` (``tools`` left out when none are offered) and returns the first
    choice's message with the reply's token usage.

    Args:
        client: an ``openai.OpenAI`` (the model is sync) or ``openai.AsyncOpenAI`` (async).
        model: the model's name, e.g. ``"gpt-4o"``.
        **params: passed to every request, e.g. ``temperature=0``, ``tool_choice="auto"``.

    Example:
        >>> from openai import OpenAI                                   # doctest: +SKIP
        >>> bench.run(tb.models.openai(OpenAI(), model="gpt-4o"), "How far is Paris?")
    """
    _check(client, model, params, ("model", "messages", "tools"), "openai")
    import openai as sdk  # the optional extra; the client exists, so it is installed

    is_async = isinstance(client, sdk.AsyncOpenAI) or _is_async(client.chat.completions.create)
    return (_AsyncOpenAIModel if is_async else _OpenAIModel)(client, model, params, sdk.APIError)


def anthropic(client: Any, model: str, max_tokens: int = 1024,
              **params: Any) -> Callable[..., Any]:
    """A model function over an ``anthropic`` client (``Anthropic`` or ``AsyncAnthropic``),
    converting the OpenAI-format conversation and tools to the Messages API and its reply
    back.

    Args:
        client: an ``anthropic.Anthropic`` (the model is sync) or ``AsyncAnthropic``
            (async).
        model: the model's name, e.g. ``"claude-sonnet-4-5"``.
        max_tokens: the most tokens of one reply (the Messages API requires it).
        **params: passed to every request, e.g. ``stop_sequences=["END"]``.

    Extended thinking blocks are not carried back into the conversation, so leave thinking
    off for tool use.

    Example:
        >>> from anthropic import Anthropic                             # doctest: +SKIP
        >>> bench.run(tb.models.anthropic(Anthropic(), model="claude-sonnet-4-5"), "...")
    """
    _check(client, model, params, ("model", "messages", "tools", "system", "max_tokens"),
           "anthropic")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens is a positive int, not {max_tokens!r}")
    import anthropic as sdk  # the optional extra; the client exists, so it is installed

    is_async = isinstance(client, sdk.AsyncAnthropic) or _is_async(client.messages.create)
    made = _AsyncAnthropicModel if is_async else _AnthropicModel
    return made(client, model, {"max_tokens": max_tokens, **params}, sdk.APIError)


def _check(client: Any, model: object, params: Mapping[str, Any], own: tuple[str, ...],
           provider: str) -> None:
    if not isinstance(model, str) or not model:
        raise TypeError(f"model is the provider's model name (a non-empty str), not {model!r}")
    taken = sorted(set(params) & set(own))
    if taken:
        raise TypeError(f"{taken[0]} is set by the run, not passed to {provider}(...)")
    path = ("chat", "completions", "create") if provider == "openai" else ("messages",
                                                                          "create")
    target = client
    for part in path:
        target = getattr(target, part, None)
    if not callable(target):
        raise TypeError(f"client is an {provider} client (with .{'.'.join(path)}), not "
                        f"{type(client).__name__}")


def _is_async(method: Any) -> bool:
    """An ``async def`` method, under the SDKs' decorators (``required_args``) too."""
    with contextlib.suppress(ValueError):  # a wrapper cycle: judge it as it is
        method = inspect.unwrap(method)
    return inspect.iscoroutinefunction(method)


class _Adapter:
    """What both adapters share: the client, the model's name, the fixed request params and
    the SDK's error root."""

    provider = ""

    def __init__(self, client: Any, model: str, params: dict[str, Any],
                 sdk_error: type[Exception]) -> None:
        self.client = client
        self.model = model
        self.params = params
        self.name = f"{self.provider}:{model}"
        self._sdk_error = sdk_error

    def _key(self) -> str | None:
        key = getattr(self.client, "api_key", None)
        return key if isinstance(key, str) and len(key) >= 8 else None

    def _cause(self, exc: Exception) -> Exception | None:
        """``exc`` to chain, or None when it would show the client's API key (a traceback
        prints a cause verbatim, so the chain is dropped, not redacted)."""
        key = self._key()
        return None if key is not None and key in str(exc) else exc

    def _failed(self, exc: Exception) -> ProviderError:
        status = getattr(exc, "status_code", None)
        status = status if isinstance(status, int) else None
        said = str(getattr(exc, "message", "") or exc)
        if (key := self._key()) is not None:  # a provider may echo the key it refused
            said = said.replace(key, "[redacted]")
        if status is not None:  # the SDKs lead with the status ("Error code: 429 - ...")
            said = re.sub(rf"^(Error code: )?{status}( -)? ", "", said)
        said = _cut(said)
        if status == 429:
            what = "HTTP 429, rate limited (after the client's own retries)"
        elif status is not None:
            what = f"HTTP {status}"
        elif isinstance(exc, json.JSONDecodeError):
            what = "the reply is not JSON"
        else:
            what = type(exc).__name__
        return ProviderError(f"{what}: {said}", model=self.name, status=status)

    def __repr__(self) -> str:
        return f"<model {self.name}>"


class _OpenAIModel(_Adapter):
    provider = "openai"

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
                ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.params}
        if tools:
            body["tools"] = tools
        return body

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        try:
            response = self.client.chat.completions.create(**self.request(messages, tools))
        except (self._sdk_error, ValueError) as exc:  # ValueError: a body that is not JSON
            raise self._failed(exc) from self._cause(exc)
        return self.reply(response)

    def reply(self, response: Any) -> Reply:
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise ProviderError(f"the reply has no choices with a message: "
                                f"{_cut(repr(response))}", model=self.name)
        usage = getattr(response, "usage", None)
        counted = _usage(getattr(usage, "prompt_tokens", None),
                         getattr(usage, "completion_tokens", None))
        return Reply(choices[0].message, usage=counted)


class _AsyncOpenAIModel(_OpenAIModel):
    async def __call__(self, messages: list[dict[str, Any]],  # type: ignore[override]
                       tools: list[dict[str, Any]]) -> Reply:
        try:
            response = await self.client.chat.completions.create(
                **self.request(messages, tools))
        except (self._sdk_error, ValueError) as exc:  # ValueError: a body that is not JSON
            raise self._failed(exc) from self._cause(exc)
        return self.reply(response)


class _AnthropicModel(_Adapter):
    provider = "anthropic"

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
                ) -> dict[str, Any]:
        system, converted = to_anthropic_messages(messages)
        body: dict[str, Any] = {"model": self.model, "messages": converted, **self.params}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [to_anthropic_tool(tool) for tool in tools]
        return body

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        body = self.request(messages, tools)
        try:
            response = self.client.messages.create(**body)
        except (self._sdk_error, ValueError) as exc:  # ValueError: a body that is not JSON
            raise self._failed(exc) from self._cause(exc)
        return self.reply(response)

    def reply(self, response: Any) -> Reply:
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise ProviderError(f"the reply has no content blocks: {_cut(repr(response))}",
                                model=self.name)
        message = from_anthropic_content(blocks)
        if not message.get("content") and not message.get("tool_calls") and getattr(
                response, "stop_reason", None) == "max_tokens":
            raise ProviderError(f"the reply was cut at max_tokens="
                                f"{self.params.get('max_tokens')} before any text or tool "
                                f"call; raise max_tokens", model=self.name)
        usage = getattr(response, "usage", None)
        inputs = [getattr(usage, key, None) for key in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
        counted = _usage(sum(n for n in inputs if isinstance(n, int)) if isinstance(
            inputs[0], int) else None, getattr(usage, "output_tokens", None))
        return Reply(message, usage=counted)


class _AsyncAnthropicModel(_AnthropicModel):
    async def __call__(self, messages: list[dict[str, Any]],  # type: ignore[override]
                       tools: list[dict[str, Any]]) -> Reply:
        body = self.request(messages, tools)
        try:
            response = await self.client.messages.create(**body)
        except (self._sdk_error, ValueError) as exc:  # ValueError: a body that is not JSON
            raise self._failed(exc) from self._cause(exc)
        return self.reply(response)


# -- OpenAI format -> Anthropic's Messages API --------------------------------------------------
def to_anthropic_messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` for the Messages API from an OpenAI-format conversation.

    System (and developer) messages are joined into ``system``; an assistant message becomes
    text and ``tool_use`` blocks; a tool message becomes a ``tool_result`` block; turns of
    the same role are merged (the API alternates user and assistant), with a user turn's
    tool results first, as the API requires.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = _get(message, "role")
        if role in ("system", "developer"):
            system.append(_text(_get(message, "content")))
            continue
        if role == "tool":
            blocks = [{"type": "tool_result", "tool_use_id": str(_get(message, "tool_call_id")),
                       "content": _text(_get(message, "content"))}]
            role = "user"
        elif role == "assistant":
            blocks = _assistant_blocks(message)
        else:
            blocks = _user_blocks(_get(message, "content"))
            role = "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:  # tool results lead a user turn
        turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    return "\n\n".join(text for text in system if text), turns


def to_anthropic_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI-format tool (``{"type": "function", "function": {...}}``) as Anthropic's."""
    function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
    out: dict[str, Any] = {"name": function.get("name"),
                           "input_schema": function.get("parameters") or {"type": "object"}}
    if function.get("description"):
        out["description"] = function["description"]
    return out


def _assistant_blocks(message: Any) -> list[dict[str, Any]]:
    text = _text(_get(message, "content"))
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for call in _get(message, "tool_calls") or []:
        function = _get(call, "function") or {}
        arguments = _get(function, "arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (ValueError, RecursionError):
                arguments = {}  # the run told the model so in the tool's result
        blocks.append({"type": "tool_use", "id": str(_get(call, "id")),
                       "name": str(_get(function, "name")),
                       "input": arguments if isinstance(arguments, dict) else {}})
    return blocks


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content or []:
        kind = _get(part, "type")
        if kind == "text" and _get(part, "text"):
            blocks.append({"type": "text", "text": str(_get(part, "text"))})
        elif kind == "image_url":
            url = str(_get(_get(part, "image_url") or {}, "url") or "")
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                blocks.append({"type": "image", "source": {
                    "type": "base64", "media_type": media, "data": data}})
            elif url:
                blocks.append({"type": "image", "source": {"type": "url", "url": url}})
    return blocks


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(_get(p, "text")) for p in content
                         if _get(p, "type") == "text" and _get(p, "text"))
    return str(content)


# -- Anthropic's reply -> an OpenAI-format assistant message ------------------------------------
def from_anthropic_content(blocks: list[Any]) -> dict[str, Any]:
    """The reply's ``text`` blocks as ``content`` and its ``tool_use`` blocks as
    ``tool_calls`` (arguments as JSON text); other blocks (thinking) are left out."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        kind = _get(block, "type")
        if kind == "text" and _get(block, "text"):
            texts.append(str(_get(block, "text")))
        elif kind == "tool_use":
            calls.append({"id": str(_get(block, "id")), "type": "function", "function": {
                "name": str(_get(block, "name")),
                "arguments": json.dumps(_get(block, "input") or {}, ensure_ascii=False)}})
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` for an object (the SDKs' types)."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _usage(inputs: Any, outputs: Any) -> dict[str, int] | None:
    if isinstance(inputs, int) and isinstance(outputs, int):
        return {"input": inputs, "output": outputs}
    return None


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else f"{text[:MAX_SHOWN]}… ({len(text):,} characters)"

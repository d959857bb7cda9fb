"""``tb.models.sampler(model)``: a server's sampling requests answered by the model function.

A server may ask its client to sample an LLM (``sampling/createMessage``), since 2025-11-25
with tools of its own for the model to call. ``Bench(sampling=tb.models.sampler(model))``
answers with the same ``model(messages, tools)`` a run uses: the request's messages (text,
images, audio, the server's earlier tool uses and their results) and tools become the OpenAI
chat format, and the model's reply becomes the SDK's ``CreateMessageResult`` (text), or
``CreateMessageResultWithTools`` (``tool_use`` blocks) when the request offered tools. The
plain ``sampling=`` handler contract is unchanged: this is one such handler.

The request's ``temperature``, ``max_tokens`` and ``stop_sequences`` have no place in
``model(messages, tools)``: the model function decides those. ``tool_choice`` ``"none"``
offers the model no tools.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import mcp.types as types

from toolbench._bench.models.model import ModelFailed, Turn, ask, model_name
from toolbench._bench.models.specs import ToolSpecs, build_specs
from toolbench._core.client import ToolSpec
from toolbench._transports.server_requests import HandlerError

__all__ = ["Sampler", "sampler"]

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
                  "audio/mpeg": "mp3", "audio/mp3": "mp3"}
"""Audio the OpenAI chat format takes inline (``input_audio``); other audio is described."""


def sampler(model: Callable[..., Any], *, model_timeout: float = 60.0) -> Sampler:
    """A ``sampling=`` handler that answers a server's sampling requests with ``model``.

    Args:
        model: ``model(messages, tools)``, sync or async, as ``bench.run`` takes it.
        model_timeout: seconds the model may take for one request (the bench's handler
            bound, 60 s, applies too).

    Returns:
        A handler for ``Bench(sampling=...)``; with it the bench tells servers it supports
        tools in sampling requests.

    Example:
        >>> bench = tb.Bench(sampling=tb.models.sampler(tb.ScriptedModel(["Lima."])))
    """
    return Sampler(model, model_timeout=model_timeout)


class Sampler:
    """The handler :func:`sampler` returns: a function of ``CreateMessageRequestParams``."""

    sampling_capabilities = types.SamplingCapability(tools=types.SamplingToolsCapability())
    """Read by the bench: servers are told this handler takes ``tools`` in a request."""

    def __init__(self, model: Callable[..., Any], *, model_timeout: float = 60.0) -> None:
        if not callable(model):
            raise TypeError(f"model is a function(messages, tools), not "
                            f"{type(model).__name__} {model!r}")
        if (isinstance(model_timeout, bool) or not isinstance(model_timeout, int | float)
                or not math.isfinite(model_timeout) or model_timeout <= 0):
            raise ValueError(f"model_timeout is a positive, finite number of seconds, not "
                             f"{model_timeout!r}")
        self.model = model
        self.model_timeout = float(model_timeout)
        self.__name__ = f"sampler({model_name(model)})"  # what a failure's message names

    def __repr__(self) -> str:
        return f"<sampler of {model_name(self.model)}>"

    async def __call__(self, params: types.CreateMessageRequestParams
                       ) -> types.CreateMessageResult | types.CreateMessageResultWithTools:
        specs = _specs(params)
        messages = openai_messages(params)
        try:
            turn = await ask(self.model, messages, list(specs.tools), timeout=self.model_timeout)
        except ModelFailed as exc:
            raise HandlerError(exc.reason) from exc
        return sampling_reply(turn, specs, model_name(self.model),
                              with_tools=bool(params.tools) or params.tool_choice is not None)


def _specs(params: types.CreateMessageRequestParams) -> ToolSpecs:
    """The request's tools, OpenAI-shaped (names made legal, mapped back), or none when the
    request's ``tool_choice`` says ``"none"``."""
    tools = params.tools or []
    if params.tool_choice is not None and params.tool_choice.mode == "none":
        tools = []
    pairs = [(tool.name, ToolSpec(tool.name, tool.description or "",
                                  dict(tool.input_schema or {"type": "object"})))
             for tool in tools]
    return build_specs(pairs, "openai")


def openai_messages(params: types.CreateMessageRequestParams) -> list[dict[str, Any]]:
    """The request's conversation in the OpenAI chat format: the system prompt first; an
    assistant's ``tool_use`` blocks as ``tool_calls``; a user's ``tool_result`` blocks as
    ``tool`` messages (before the user's own words)."""
    messages: list[dict[str, Any]] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        blocks = message.content_as_list
        parts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        for block in blocks:
            if isinstance(block, types.ToolUseContent):
                calls.append({"id": block.id, "type": "function", "function": {
                    "name": block.name, "arguments": json.dumps(block.input, default=str)}})
            elif isinstance(block, types.ToolResultContent):
                messages.append({"role": "tool", "tool_call_id": block.tool_use_id,
                                 "content": _tool_result_text(block)})
            else:
                parts.append(_part(block, message.role))
        if message.role == "assistant":
            if parts or calls:
                entry: dict[str, Any] = {"role": "assistant", "content": _content(parts)}
                if calls:
                    entry["tool_calls"] = calls
                messages.append(entry)
        elif parts:
            messages.append({"role": "user", "content": _content(parts)})
    return messages


def sampling_reply(turn: Turn, specs: ToolSpecs, model: str, *, with_tools: bool
                   ) -> types.CreateMessageResult | types.CreateMessageResultWithTools:
    """The model's reply as the SDK's result; a tool call the request did not offer, or with
    arguments that cannot be used, is an error the server is told."""
    if not turn.tool_calls:
        text = types.TextContent(type="text", text=turn.text or "")
        if with_tools:
            return types.CreateMessageResultWithTools(role="assistant", content=[text],
                                                      model=model, stop_reason="endTurn")
        return types.CreateMessageResult(role="assistant", content=text, model=model,
                                         stop_reason="endTurn")
    if not with_tools:
        names = ", ".join(repr(call.name) for call in turn.tool_calls[:5])
        raise HandlerError(f"the model called tools ({names}) but the request offered none")
    blocks: list[types.SamplingMessageContentBlock] = []
    if turn.text:
        blocks.append(types.TextContent(type="text", text=turn.text))
    for call in turn.tool_calls:
        name = specs.pegboard_name(call.name)
        if name is None:
            raise HandlerError(f"the model called {call.name[:200]!r}, which the request did "
                               f"not offer (offered: {', '.join(specs.names) or 'none'})")
        if call.arguments is None:
            raise HandlerError(f"the model's arguments for {name!r} cannot be used: "
                               f"{call.problem}")
        blocks.append(types.ToolUseContent(type="tool_use", id=call.id, name=name,
                                           input=call.arguments))
    return types.CreateMessageResultWithTools(role="assistant", content=blocks, model=model,
                                              stop_reason="toolUse")


def _part(block: Any, role: str) -> dict[str, Any]:
    """One content block as an OpenAI content part; what the format cannot carry (an image
    in an assistant's words, audio it does not take) is described in text."""
    if isinstance(block, types.TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, types.ImageContent) and role == "user":
        return {"type": "image_url",
                "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}
    if isinstance(block, types.AudioContent) and role == "user" and (
            block.mime_type in _AUDIO_FORMATS):
        return {"type": "input_audio", "input_audio": {
            "data": block.data, "format": _AUDIO_FORMATS[block.mime_type]}}
    kind = getattr(block, "type", type(block).__name__)
    mime = getattr(block, "mime_type", None)
    return {"type": "text", "text": f"[{kind}{': ' + mime if mime else ''}]"}


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    """Plain text when every part is text (what most models expect), else the parts."""
    if not parts:
        return None
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


def _tool_result_text(block: types.ToolResultContent) -> str:
    parts: list[str] = []
    if block.structured_content is not None:
        parts.append(json.dumps(block.structured_content, ensure_ascii=False, default=str))
    for item in block.content:
        if isinstance(item, types.TextContent):
            parts.append(item.text)
        else:
            parts.append(f"[{getattr(item, 'type', type(item).__name__)}]")
    text = "\n".join(parts) or "(no content)"
    return f"Error: {text}" if block.is_error else text

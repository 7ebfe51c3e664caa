"""Tool-call arguments and results, read where each framework puts them.

Sources, first present wins: GenAI semconv ``gen_ai.tool.call.arguments``/``.result``;
any-agent ``gen_ai.tool.args``/``gen_ai.output``; PydanticAI ``tool_arguments``/
``tool_response``; OpenInference ``input.value``/``output.value``; Google ADK
``gcp.vertex.agent.tool_call_args``/``tool_response``; OpenLLMetry
``traceloop.entity.input``/``output``; Claude-Code-style ``tool_input``/``tool_result``;
then span events (Strands ``gen_ai.client.inference.operation.details`` tool-call parts,
older Strands ``gen_ai.tool.message``/``gen_ai.choice`` events).

Values are JSON-parsed where they parse, and framework envelopes are removed so that
``tool_result_matches`` sees the tool's own result: a serialized LangChain ``ToolMessage``,
LangGraph's ``{"output": <message>}``, Strands' ``[{"text": ...}]`` content blocks, an MCP
``{"content": [{"type": "text", "text": ...}]}`` result whose text is JSON.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from canon.gates.contracts.execution import StepPayload
from canon.gates.contracts.otel.rawspan import RawEvent
from canon.gates.contracts.otel.values import otlp_events, parse_json_text

_ARGUMENT_KEYS = (
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.args",
    "tool_arguments",
    "input.value",
    "gcp.vertex.agent.tool_call_args",
    "traceloop.entity.input",
    "tool_input",
    "tool_parameters",
    "tool.parameters",
    "ai.toolCall.args",
)
_RESULT_KEYS = (
    "gen_ai.tool.call.result",
    "gen_ai.output",
    "tool_response",
    "output.value",
    "gcp.vertex.agent.tool_response",
    "traceloop.entity.output",
    "tool_result",
    "tool.output",
    "ai.toolCall.result",
)
_MAX_UNWRAP = 5
_MAX_LITERAL = 100_000


class LazyToolPayload(StepPayload):
    """A tool call's arguments and result, parsed from its span on first read."""

    __slots__ = ("_attrs", "_events")

    def __init__(self, attrs: Mapping[str, Any], events: object) -> None:
        # no super().__init__: leaving the pair unset is what makes StepPayload call _load
        self._attrs = attrs
        self._events = events  # decoded RawEvents, or the span's raw OTLP event list

    def _load(self) -> tuple[Any, Any]:
        events = self._events
        decoded = events if events.__class__ is tuple else otlp_events(events)
        try:
            return tool_io(self._attrs, decoded)
        except RecursionError:  # absurdly nested payloads: keep the step, drop the payload
            return None, None


def tool_io(attrs: Mapping[str, Any], events: tuple[RawEvent, ...]) -> tuple[Any, Any]:
    """Parsed ``(arguments, result)`` of a tool-call span; ``None`` where the trace has none."""
    inputs: Any = None
    outputs: Any = None
    for key in _ARGUMENT_KEYS:
        if key in attrs:
            inputs = unwrap_arguments(attrs[key])
            break
    for key in _RESULT_KEYS:
        if key in attrs:
            outputs = unwrap_result(attrs[key])
            break
    if (inputs is None or outputs is None) and events:
        event_inputs, event_outputs = _from_events(events)
        inputs = event_inputs if inputs is None else inputs
        outputs = event_outputs if outputs is None else outputs
    return inputs, outputs


def unwrap_arguments(value: object) -> Any:
    """Parse tool arguments and take them out of their envelope.

    Envelopes: LangChain's ``{"input_str", "inputs"}``, LlamaIndex's ``{"kwargs": ...}``
    (with empty ``args``), a one-item list (Monocle's ``data.input``), a Python ``repr``
    of a dict (Monocle under LangChain).
    """
    parsed = parse_json_text(value)
    if isinstance(parsed, list) and len(parsed) == 1:
        parsed = parse_json_text(parsed[0])
    if isinstance(parsed, str):
        parsed = python_literal(parsed)
    if isinstance(parsed, dict):
        if "input_str" in parsed and "inputs" in parsed:
            return parsed["inputs"]
        kwargs = parsed.get("kwargs")
        if (
            isinstance(kwargs, dict)
            and set(parsed) <= {"args", "kwargs"}
            and not parsed.get("args")
        ):
            return kwargs
    return parsed


def python_literal(text: str) -> Any:
    """A dict or list written as a Python literal (``{'a': 1}``), or ``text`` unchanged."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")) or len(stripped) > _MAX_LITERAL:
        return text
    try:
        value = ast.literal_eval(stripped)  # literals only: no names, calls or code
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, (dict, list)) else text


def unwrap_result(value: object, depth: int = 0) -> Any:
    """Parse a tool result and peel framework envelopes off it (bounded depth)."""
    if depth >= _MAX_UNWRAP:
        return value
    if isinstance(value, str):
        parsed = parse_json_text(value)
        return value if parsed is value else unwrap_result(parsed, depth + 1)
    if isinstance(value, dict):
        if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
            return unwrap_result(value["kwargs"].get("content"), depth + 1)
        inner = value.get("output")
        if isinstance(inner, dict) and inner.get("lc") == 1:
            return unwrap_result(inner, depth + 1)
        if "tool_name" in value and "raw_output" in value and "content" in value:
            # LlamaIndex ToolOutput: the tool's own return value, else its text
            raw = value["raw_output"]
            return unwrap_result(raw if raw is not None else value["content"], depth + 1)
        if value.get("type") == "text" and isinstance(value.get("text"), str):
            return unwrap_result(value["text"], depth + 1)  # a lone MCP text block
        content = value.get("content")
        if isinstance(content, list) and len(content) == 1:
            block = content[0]
            if isinstance(block, dict) and block.get("type") == "text":
                parsed = parse_json_text(block.get("text"))
                if isinstance(parsed, (dict, list)):
                    return unwrap_result(parsed, depth + 1)
        return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        block = value[0]
        if len(block) == 1 and "text" in block:
            return unwrap_result(block["text"], depth + 1)
        if len(block) == 1 and "json" in block:
            return block["json"]
    return value


def _from_events(events: tuple[RawEvent, ...]) -> tuple[Any, Any]:
    inputs: Any = None
    outputs: Any = None
    for event in events:
        attrs = event.attributes
        if event.name == "gen_ai.tool.message" and inputs is None:
            inputs = unwrap_arguments(attrs.get("content"))
        elif event.name == "gen_ai.choice" and outputs is None:
            outputs = unwrap_result(attrs.get("message"))
        if event.name == "data.input" and inputs is None:  # Monocle
            inputs = unwrap_arguments(attrs.get("input"))
        elif event.name == "data.output" and outputs is None:
            outputs = unwrap_result(attrs.get("response", attrs.get("output")))
        if inputs is None and "gen_ai.input.messages" in attrs:
            part = _tool_part(attrs["gen_ai.input.messages"], "tool_call")
            if part is not None:
                inputs = unwrap_arguments(part.get("arguments"))
        if outputs is None and "gen_ai.output.messages" in attrs:
            part = _tool_part(attrs["gen_ai.output.messages"], "tool_call_response")
            if part is not None:
                outputs = unwrap_result(part.get("response", part.get("result")))
    return inputs, outputs


def _tool_part(messages: object, part_type: str) -> dict[str, Any] | None:
    parsed = parse_json_text(messages)
    if not isinstance(parsed, list):
        return None
    for message in parsed:
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list):
            continue
        for part in parts:
            if isinstance(part, dict) and part.get("type") == part_type:
                return part
    return None

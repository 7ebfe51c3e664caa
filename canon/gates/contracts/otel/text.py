"""The request text and the final answer text of a run, read per framework.

Message lists (GenAI semconv ``parts``, OpenAI-style ``content``, LangChain serialized or
``[role, text]`` pairs, Google ``contents``) give the *last* user message with text as the
request (the current turn, not the oldest one in a multi-turn history) and the last
assistant message with text as the answer; tool-call-only messages are skipped. A value that
is not a message structure is used as written, so an answer that happens to be valid JSON
(``42``, ``true``, ``{"steps": ...}``) is kept as its text, never dropped; a message written
as its Python repr (BeeAI's ``{'role': 'assistant', 'text': ...}``) gives its text.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.values import parse_json_text

_USER_ROLES = frozenset({"user", "human", "humanmessage"})
_ASSISTANT_ROLES = frozenset({"assistant", "ai", "model", "aimessage", "aimessagechunk"})
_PLAIN_INPUT_KEYS = ("gen_ai.user.message", "user_prompt", "prompt", "gen_ai.prompt")
# request envelopes: smolagents ``task``, LlamaIndex ``user_msg``, plain input/prompt keys
_WRAPPED_INPUT_KEYS = ("input", "query", "question", "prompt", "user_input", "task", "user_msg")
# the longest Python-repr message parsed (BeeAI); anything longer is kept as written
_REPR_LIMIT = 200_000


def request_text(span: RawSpan) -> str | None:
    """The user's request as this span records it, or ``None``."""
    attrs = span.attributes
    if "gen_ai.input.messages" in attrs:
        found = last_text(attrs["gen_ai.input.messages"], _USER_ROLES)
        if found:
            return found
    for event in span.events:
        event_attrs = event.attributes
        if "gen_ai.input.messages" in event_attrs:
            found = last_text(event_attrs["gen_ai.input.messages"], _USER_ROLES)
            if found:
                return found
        if event.name == "gen_ai.user.message":
            found = _message_text(event_attrs.get("content"))
            if found:
                return found
    found = _indexed_text(attrs, "gen_ai.prompt.", ".content", _USER_ROLES, ".role")
    found = found or _indexed_text(
        attrs, "llm.input_messages.", ".message.content", _USER_ROLES, ".message.role"
    )
    if found:
        return found
    for key in ("pydantic_ai.all_messages", "gcp.vertex.agent.llm_request"):
        if key in attrs:
            found = last_text(attrs[key], _USER_ROLES)
            if found:
                return found
    for key in ("input.value", "traceloop.entity.input", "ai.prompt"):
        if key in attrs:
            found = _wrapped_text(attrs[key], _USER_ROLES)
            if found:
                return found
    raw_input = attrs.get("input.value")
    # a JSON envelope with no message in it is not the request: look further
    if (
        isinstance(raw_input, str)
        and raw_input.strip()
        and not isinstance(parse_json_text(raw_input), (dict, list))
    ):
        return raw_input
    for event in span.events:
        if event.name == "data.input":  # Monocle
            found = _monocle_request(event.attributes.get("input"))
            if found:
                return found
    for key in _PLAIN_INPUT_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and value.strip():
            found = last_text(value, _USER_ROLES)
            return found or value
    return None


def answer_text(span: RawSpan) -> str | None:
    """The final answer this span records, or ``None``."""
    attrs = span.attributes
    if "gen_ai.output.messages" in attrs:
        found = last_text(attrs["gen_ai.output.messages"], _ASSISTANT_ROLES)
        if found:
            return found
    final = attrs.get("final_result")
    if final is not None:
        return final if isinstance(final, str) else _dump(final)
    for event in reversed(span.events):
        event_attrs = event.attributes
        if "gen_ai.output.messages" in event_attrs:
            found = last_text(event_attrs["gen_ai.output.messages"], _ASSISTANT_ROLES)
            if found:
                return found
        if event.name == "gen_ai.choice":
            found = _message_text(event_attrs.get("message"))
            if found:
                return found
    found = _indexed_text(attrs, "gen_ai.completion.", ".content", None, ".role")
    found = found or _indexed_text(
        attrs, "llm.output_messages.", ".message.content", None, ".message.role"
    )
    if found:
        return found
    if "gcp.vertex.agent.llm_response" in attrs:
        found = _google_response_text(attrs["gcp.vertex.agent.llm_response"])
        if found:
            return found
    for key in ("output.value", "traceloop.entity.output", "gen_ai.choice", "gen_ai.completion"):
        if key in attrs:
            found = _wrapped_text(attrs[key], _ASSISTANT_ROLES)
            if found:
                return found
    raw_output = attrs.get("output.value")
    if isinstance(raw_output, str) and raw_output.strip():
        return raw_output  # OpenInference's output is the answer as written, JSON or not
    output = attrs.get("gen_ai.output")
    if isinstance(output, str) and output.strip() and not _is_tool_call_list(output):
        return output
    vercel = attrs.get("ai.response.text")
    if isinstance(vercel, str) and vercel.strip():
        return vercel
    for event in reversed(span.events):
        if event.name == "data.output":  # Monocle
            found = _monocle_text(
                event.attributes.get("response", event.attributes.get("output")),
                ("assistant", "ai"),
            )
            if found:
                return found
    return None


def final_output_text(value: object) -> str | None:
    """Text of a container-level final output (any-agent's ``final_output``)."""
    if value is None:
        return None
    return value if isinstance(value, str) else _dump(value)


def last_text(messages: object, roles: frozenset[str]) -> str | None:
    """Text of the last message in ``messages`` whose role is in ``roles`` and has text."""
    parsed = parse_json_text(messages)
    if isinstance(parsed, dict):
        inner = parsed.get("messages", parsed.get("contents"))
        parsed = inner if isinstance(inner, list) else [parsed]
    if not isinstance(parsed, list):
        return None
    for message in reversed(parsed):
        if _role(message) in roles:
            found = _message_text(message)
            if found:
                return found
    return None


def _role(message: object) -> str:
    if isinstance(message, (list, tuple)) and len(message) == 2:
        return str(message[0]).lower()
    if not isinstance(message, dict):
        return ""
    message = _without_kwargs(message)
    if message.get("lc") == 1:
        ident = message.get("id")
        return str(ident[-1]).lower() if isinstance(ident, list) and ident else ""
    role = message.get("role", message.get("type"))
    return role.lower() if isinstance(role, str) else ""


def _message_text(message: object) -> str | None:
    if isinstance(message, str):
        parsed = parse_json_text(message)
        if isinstance(parsed, (dict, list)):
            return _message_text(parsed)
        return message if message.strip() else None
    if isinstance(message, (list, tuple)):
        if len(message) == 2 and isinstance(message[1], str):
            return message[1] or None
        return _join_blocks(message)
    if not isinstance(message, dict):
        return None
    if message.get("lc") == 1 and isinstance(message.get("kwargs"), dict):
        return _message_text(message["kwargs"].get("content"))
    message = _without_kwargs(message)
    parts = message.get("parts")
    if isinstance(parts, list):
        return _join_blocks(parts)
    content = message.get("content", message.get("text"))
    if isinstance(content, str):
        return content or None
    if isinstance(content, (list, dict)):
        return _message_text(content)
    return None


def _without_kwargs(message: dict[str, Any]) -> dict[str, Any]:
    """A LangChain message dumped as ``{"kwargs": {...}}`` without its ``lc`` marker."""
    kwargs = message.get("kwargs")
    if isinstance(kwargs, dict) and "role" not in message and "type" not in message:
        return kwargs
    return message


def _join_blocks(blocks: list[Any] | tuple[Any, ...]) -> str | None:
    texts = []
    for block in blocks:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type", "text") == "text":
            text = block.get("content", block.get("text"))
            if isinstance(text, str):
                texts.append(text)
    joined = " ".join(text for text in texts if text)
    return joined or None


def _indexed_text(
    attrs: dict[str, Any],
    prefix: str,
    content_suffix: str,
    roles: frozenset[str] | None,
    role_suffix: str,
) -> str | None:
    """Last message text in OpenLLMetry/OpenInference flattened ``prefix.N.*`` attributes."""
    if f"{prefix}0{content_suffix}" not in attrs and f"{prefix}0{role_suffix}" not in attrs:
        return None
    found = None
    index = 0
    while f"{prefix}{index}{content_suffix}" in attrs or f"{prefix}{index}{role_suffix}" in attrs:
        content = attrs.get(f"{prefix}{index}{content_suffix}")
        if content is None and content_suffix == ".message.content":
            content = _content_parts(attrs, f"{prefix}{index}")
        role = attrs.get(f"{prefix}{index}{role_suffix}") if role_suffix else None
        if isinstance(content, str) and content and (roles is None or _in_roles(role, roles)):
            found = content
        index += 1
    return found


def _content_parts(attrs: dict[str, Any], prefix: str) -> str | None:
    """Multi-part content of flattened message ``prefix``, its text parts joined.

    OpenInference writes ``<prefix>.message.contents.M.message_content.text`` (with a
    ``type``; reasoning parts are not the answer), some exporters ``.message.content.M``.
    """
    texts = []
    part = 0
    while True:
        base = f"{prefix}.message.contents.{part}.message_content."
        kind = attrs.get(base + "type")
        text = attrs.get(base + "text")
        if kind is None and text is None:
            break
        if isinstance(text, str) and text and kind in (None, "text"):
            texts.append(text)
        part += 1
    part = 0
    while not texts and f"{prefix}.message.content.{part}" in attrs:
        text = attrs[f"{prefix}.message.content.{part}"]
        if isinstance(text, str) and text:
            texts.append(text)
        part += 1
    return "\n".join(texts) or None


def _in_roles(role: object, roles: frozenset[str]) -> bool:
    return isinstance(role, str) and role.lower() in roles


def _wrapped_text(value: object, roles: frozenset[str]) -> str | None:
    parsed = parse_json_text(value)
    if isinstance(parsed, str):
        if not parsed.strip():
            return None
        return _python_message(parsed, roles) or parsed
    if isinstance(parsed, dict):
        for key in ("inputs", "outputs"):
            if key in parsed:
                parsed = parsed[key]
                break
    if isinstance(parsed, dict):
        if "messages" in parsed:
            return last_text(parsed["messages"], roles)
        choices = parsed.get("choices")
        if isinstance(choices, list):  # an OpenAI chat completion (LangSmith's wrap_openai)
            messages = [c.get("message") for c in choices if isinstance(c, dict)]
            return last_text(messages, roles)
        for key in (*_WRAPPED_INPUT_KEYS, "output", "answer", "content"):
            inner = parsed.get(key)
            if isinstance(inner, str) and inner.strip():
                return inner
        if parsed.get("lc") == 1 and _role(parsed) in roles:
            return _message_text(parsed)
        return None
    if isinstance(parsed, list):
        return last_text(parsed, roles)
    # a scalar answer (a number, true/false) is still the answer, as written
    return value if isinstance(value, str) and value.strip() and parsed is not None else None


def _python_message(text: str, roles: frozenset[str]) -> str | None:
    """The text of a message written as its Python repr, as BeeAI writes its answer."""
    stripped = text.strip()
    if not stripped.startswith("{'role'") or len(stripped) > _REPR_LIMIT:
        return None
    try:
        # literal_eval reads literals only: a repr, never code
        value = ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict) or not _in_roles(value.get("role"), roles):
        return None
    inner = value.get("text", value.get("content"))
    return inner if isinstance(inner, str) and inner.strip() else None


def _monocle_request(value: object) -> str | None:
    """The user's text in a Monocle ``data.input`` event."""
    items = value if isinstance(value, list) else [value]
    for item in reversed(items):
        found = _monocle_text(item, ("user", "human"))
        if found:
            return found
    return None


def _monocle_text(value: object, roles: tuple[str, str]) -> str | None:
    """Monocle message text: plain (or JSON-quoted) text, or ``{"<role>": text}``."""
    parsed = parse_json_text(value)
    if isinstance(parsed, str):
        return parsed if parsed.strip() else None
    if isinstance(parsed, dict):
        for role in roles:
            text = parsed.get(role)
            if isinstance(text, str) and text.strip():
                return text
    return None


def _google_response_text(value: object) -> str | None:
    parsed = parse_json_text(value)
    content = parsed.get("content") if isinstance(parsed, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    return _join_blocks(parts) if isinstance(parts, list) else None


def _is_tool_call_list(text: str) -> bool:
    parsed = parse_json_text(text)
    return (
        isinstance(parsed, list)
        and bool(parsed)
        and all(isinstance(item, dict) and "tool.name" in item for item in parsed)
    )


def _dump(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)

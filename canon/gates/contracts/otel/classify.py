"""Step classification: what kind of step a span is and the name contracts know it by.

Tool calls are named by their tool, every other step by its span name (as the reference
does, so contracts that name ``chat`` or an agent span keep working). The first rule that
fires wins:

1. tool call: ``gen_ai.operation.name == "execute_tool"``; a ``gen_ai.tool.name`` on a span
   that is not a model or agent call (PydanticAI ``running tool``); OpenInference
   ``openinference.span.kind == TOOL`` (BeeAI's per-event TOOL spans are one call: the
   ``success``/``error`` event's, named by its emitter ``target``; ``beeai.py`` adds the
   agent's update that is a call's only record after classification); OpenLLMetry
   ``traceloop.span.kind == tool``, or a legacy ``<name>.tool`` span that carries
   OpenLLMetry's ``traceloop.*`` marks; Claude Code ``claude_code.tool``; Datadog APM
   spans (``<integration>.tool.<Tool>``, a ``<integration>.tool`` span named by its
   ``resource``, a ``resource`` ending in `` Tool`` such as ``CrewAI Tool``, a Genkit
   ``genkit.operation.type`` of ``tool`` named by its ``resource``); Langfuse
   observations of type ``TOOL``; span names ``execute_tool <name>`` and
   ``running tool: <name>``. The PydanticAI ``running tools`` wrapper around parallel
   calls is *not* a tool.
2. agent: ``invoke_agent``/``create_agent`` operations, OpenInference ``AGENT``,
   OpenLLMetry ``agent``/``workflow`` spans, PydanticAI ``agent run``, Claude Code
   ``claude_code.interaction``, Datadog ``resource`` `` Agent``/``Crew Kickoff``, a Genkit
   ``flow``, Langfuse ``AGENT`` observations.
3. model call: chat-like operations (``chat``, ``generate_content``, ``call_llm`` ...),
   OpenInference ``LLM``/``EMBEDDING``, ``llm.request.type``, ``ChatBedrock.chat`` or
   ``chat <model>`` names, ``claude_code.llm_request``, Langfuse ``GENERATION``, or a
   request model plus token usage. Monocle/Okahu ``span.type`` (``agentic.tool.invocation``
   and ``agentic.mcp.invocation`` are tools named by their first entity, ``inference*``
   model calls, ``retrieval``, other ``agentic.*`` agents) and Vercel AI SDK spans, known by
   their ``ai.operationId`` or ``ai.toolCall.name`` attribute whatever the span's name
   (``ai.toolCall`` is a tool; ``ai.generateText``, ``ai.streamText`` ... and their
   ``doGenerate``/``doStream`` children are model calls) are read right after the GenAI
   operation.
4. retrieval: a Bedrock knowledge base id, ``gen_ai.data_source.id``, a ``retrieval``
   operation, OpenInference ``RETRIEVER``.
5. human review: a span (not a tool) named or operated as human review / approval /
   human-in-the-loop.
6. anything else is ``custom`` (event loops, HTTP, queues, graph tasks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from canon.gates.contracts.execution import StepKind

# Every attribute ``classify`` looks up by name; ``hot`` must hold each one the span has.
CLASSIFY_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "openinference.span.kind",
        "tool.name",
        "traceloop.span.kind",
        "traceloop.entity.name",
        "tool_name",
        "llm.request.type",
        "gen_ai.request.model",
        "aws.bedrock.knowledge_base.id",
        "gen_ai.data_source.id",
        "span.type",
        "entity.1.name",
        "entity",
        "ai.toolCall.name",
        "ai.operationId",
        "resource.name",
        "langfuse.observation.type",
        "traceloop.workflow.name",
        "target",
        "genkit.operation.type",
    }
)
# BeeAI's OpenInference spans follow its emitter: one TOOL span per event of one call. The
# event that settles the call (success or error) is the call; start/finish are not.
_BEEAI_SETTLING = frozenset({"success", "error"})
_BEEAI_PASSING = frozenset({"start", "finish", "retry", "partialUpdate"})
# OpenLLMetry (Traceloop) marks its spans with these; its legacy ``<name>.tool`` span names
# mean a tool only there (Datadog's ``pydantic_ai.tool`` is no tool called ``pydantic_ai``).
_OPENLLMETRY_KEYS = ("traceloop.span.kind", "traceloop.entity.name", "traceloop.workflow.name")
# dd-trace-js's Genkit integration types its spans in ``genkit.operation.type``.
_GENKIT_KINDS: dict[str, StepKind] = {
    "tool": "tool_call",
    "generation": "model_call",
    "embedding": "model_call",
    "retrieval": "retrieval",
    "flow": "agent",
}
_LANGFUSE_KINDS: dict[str, StepKind] = {
    "AGENT": "agent",
    "GENERATION": "model_call",
    "EMBEDDING": "model_call",
    "RETRIEVER": "retrieval",
}

MODEL_OPS = frozenset(
    {
        "chat",
        "text_completion",
        "generate_content",
        "llm_request",
        "call_llm",
        "embeddings",
        "completion",
    }
)
AGENT_OPS = frozenset({"invoke_agent", "create_agent"})
_MONOCLE_TOOLS = frozenset({"agentic.tool.invocation", "agentic.mcp.invocation"})
_VERCEL_MODEL_CALLS = (
    "ai.generateText",
    "ai.streamText",
    "ai.generateObject",
    "ai.streamObject",
    "ai.embed",
)
_RETRIEVAL_OPS = frozenset({"retrieval", "retrieve", "search"})
_HUMAN_WORDS = ("human_review", "human_in_the_loop", "human_approval", "human_input")


def classify(
    name: str, hot: Mapping[str, Any], attrs: Mapping[str, Any] | None = None
) -> tuple[StepKind, str]:
    """Return the step kind and step name of a span with ``name`` and decoded attributes.

    ``hot`` holds (at least) the span's ``CLASSIFY_KEYS`` attributes; ``attrs`` is all of
    them (only the rare token-usage rule walks every key), ``hot`` when not given.
    """
    get = hot.get
    op = get("gen_ai.operation.name")
    if op.__class__ is not str:
        op = ""  # a list or mapping here is malformed; it must not reach the set lookups
    tool = get("gen_ai.tool.name")
    if op == "execute_tool":
        return "tool_call", _tool_name(tool, name, hot)
    if tool and isinstance(tool, str) and op not in MODEL_OPS and op not in AGENT_OPS:
        return "tool_call", tool
    if op in MODEL_OPS:
        return "model_call", name
    if op in AGENT_OPS:
        return "agent", name
    monocle = get("span.type")
    if monocle.__class__ is str:
        found = _monocle(monocle, name, hot)
        if found is not None:
            return found
    vercel = get("ai.operationId")
    if vercel.__class__ is str or "ai.toolCall.name" in hot:
        # the Vercel AI SDK names its operation in an attribute; a span recorded elsewhere
        # (Langfuse names a tool span after its tool) keeps it
        found = _vercel(vercel if vercel.__class__ is str else "", name, hot)
        if found is not None:
            return found
    oi_kind = get("openinference.span.kind")
    if isinstance(oi_kind, str):
        oi_kind = oi_kind.upper()
        if oi_kind == "TOOL":
            target = get("target")
            if target.__class__ is str and "." in target:
                emitter, _, event = target.rpartition(".")
                if event in _BEEAI_SETTLING:
                    return "tool_call", _tool_name(get("tool.name"), emitter, hot)
                if event in _BEEAI_PASSING:
                    return "custom", name
            return "tool_call", _tool_name(get("tool.name"), name, hot)
    tl_kind = get("traceloop.span.kind")
    if tl_kind == "tool":
        return "tool_call", _tool_name(get("traceloop.entity.name"), name, hot)
    if name == "claude_code.tool":
        return "tool_call", _tool_name(get("tool_name"), name, hot)
    resource = get("resource.name")
    if resource.__class__ is str:
        found = _datadog(resource, name, get("genkit.operation.type"))
        if found is not None:
            return found
    langfuse = get("langfuse.observation.type")
    if langfuse == "TOOL":
        return "tool_call", _tool_name(None, name, hot)
    by_name = _tool_from_span_name(name)
    if not by_name and any(key in hot for key in _OPENLLMETRY_KEYS):
        by_name = _legacy_tool(name)
    if by_name:
        return "tool_call", by_name
    if langfuse.__class__ is str and langfuse in _LANGFUSE_KINDS:
        return _LANGFUSE_KINDS[langfuse], name
    if op in AGENT_OPS or oi_kind == "AGENT" or tl_kind in ("agent", "workflow"):
        return "agent", name
    if name in ("agent run", "claude_code.interaction") or name.startswith("agent run"):
        return "agent", name
    if _is_model_call(name, op, oi_kind, hot, hot if attrs is None else attrs):
        return "model_call", name
    if (
        "aws.bedrock.knowledge_base.id" in hot
        or "gen_ai.data_source.id" in hot
        or op in _RETRIEVAL_OPS
        or oi_kind == "RETRIEVER"
    ):
        return "retrieval", name
    lowered = (op or name).lower().replace(" ", "_").replace("-", "_")
    if any(word in lowered for word in _HUMAN_WORDS):
        return "human_review", name
    return "custom", name


def _monocle(span_type: str, name: str, hot: Mapping[str, Any]) -> tuple[StepKind, str] | None:
    """Monocle (monocle2ai) and Okahu spans, typed by ``span.type``."""
    if span_type in _MONOCLE_TOOLS:
        return "tool_call", _tool_name(_first_entity_name(hot), name, hot)
    if span_type.startswith("inference"):
        return "model_call", name
    if span_type == "retrieval":
        return "retrieval", name
    if span_type.startswith("agentic."):
        return "agent", name
    return None


def _first_entity_name(hot: Mapping[str, Any]) -> object:
    """Monocle's ``entity.1.name``, or the first name in Okahu's ``entity`` list."""
    found = hot.get("entity.1.name")
    if found is None:
        entities = hot.get("entity")
        if isinstance(entities, list) and entities and isinstance(entities[0], dict):
            found = entities[0].get("name")
    return found


def _vercel(operation: str, name: str, hot: Mapping[str, Any]) -> tuple[StepKind, str] | None:
    """Vercel AI SDK spans (``ai.generateText``, ``ai.toolCall`` ...)."""
    if operation == "ai.toolCall" or "ai.toolCall.name" in hot:
        return "tool_call", _tool_name(hot.get("ai.toolCall.name"), name, hot)
    if operation.startswith(_VERCEL_MODEL_CALLS):
        return "model_call", name
    return None


def _datadog(resource: str, name: str, genkit: object) -> tuple[StepKind, str] | None:
    """Datadog APM spans of its LLM integrations, typed by name and ``resource``."""
    if genkit.__class__ is str and genkit in _GENKIT_KINDS:
        # dd-trace-js's Genkit spans: genkit.request for a model, an embedder or a retriever
        kind = _GENKIT_KINDS[genkit]
        return kind, resource if kind == "tool_call" and resource else name
    head, dot, tool = name.partition(".tool.")
    if dot and head and tool:
        return "tool_call", tool  # claude_agent_sdk.tool.Bash
    if name.endswith(".tool") and resource and resource != name:
        return "tool_call", resource  # pydantic_ai.tool, resource = the tool's name
    if resource.endswith(" Tool"):
        return "tool_call", name  # "CrewAI Tool", "Pydantic Tool": the span names the tool
    if resource.endswith(" Agent") or resource == "Crew Kickoff":
        return "agent", name
    return None


def _tool_name(preferred: object, span_name: str, hot: Mapping[str, Any]) -> str:
    for candidate in (preferred, hot.get("gen_ai.tool.name"), hot.get("tool.name")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    from_name = _tool_from_span_name(span_name) or _legacy_tool(span_name)
    return from_name or span_name


def step_name_for(name: str) -> str:
    """The step name a contract's ``name`` refers to: a raw tool span name means its tool.

    ``execute_tool lookup_x`` and ``running tool: lookup_x`` are always classified as a tool
    call named ``lookup_x``; so is OpenLLMetry's ``lookup_x.tool``, the one legacy name
    contracts were written with.
    """
    return _tool_from_span_name(name) or _legacy_tool(name) or name


def _tool_from_span_name(name: str) -> str:
    """Tool name from ``execute_tool X`` or ``running tool: X``."""
    if name.startswith("execute_tool "):
        return name[13:].strip()
    if name.startswith("running tool:"):
        return name[13:].strip()
    return ""


def _legacy_tool(name: str) -> str:
    """Tool name from OpenLLMetry's legacy ``X.tool`` span name."""
    if name.endswith(".tool") and not name.startswith("claude_code") and len(name) > 5:
        return name[:-5]
    return ""


def _is_model_call(
    name: str, op: str, oi_kind: object, hot: Mapping[str, Any], attrs: Mapping[str, Any]
) -> bool:
    if op in MODEL_OPS or oi_kind in ("LLM", "EMBEDDING"):
        return True
    if "llm.request.type" in hot or name == "claude_code.llm_request":
        return True
    if "ChatBedrock.chat" in name or name.startswith(("chat ", "call_llm")):
        return True
    if "gen_ai.request.model" in hot:
        return any(key.startswith(("gen_ai.usage", "llm.usage")) for key in attrs)
    return False

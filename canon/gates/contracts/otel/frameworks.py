"""Which agent framework (or instrumentation) produced a trace.

A framework's own mark (scope name, provider, a framework-only attribute or span name)
beats an instrumentation convention (OpenInference, OpenLLMetry, plain GenAI semconv),
because instrumentations run under many frameworks (kagent's ADK traces carry OpenLLMetry
``openai.chat`` spans too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Every attribute ``FrameworkDetector.observe`` looks at.
DETECT_KEYS = frozenset(
    {
        "gen_ai.provider.name",
        "gen_ai.system",
        "any_agent.version",
        "openinference.span.kind",
        "traceloop.span.kind",
        "llm.request.type",
        "gen_ai.operation.name",
        "entity.1.type",
        "entity.2.type",
        "entity",
        "monocle_apptrace.version",
        "ai.operationId",
    }
)

# The keys a framework's own mark can come from; the others only name a convention (weak).
STRONG_KEYS = frozenset(
    {"gen_ai.provider.name", "gen_ai.system", "any_agent.version", "entity.1.type"}
    | {"entity.2.type", "entity"}
)
# The weak marks, by the key whose presence gives them, in ``observe``'s order.
_WEAK_KEYS = (
    ("monocle_apptrace.version", "monocle"),
    ("ai.operationId", "vercel_ai"),
    ("openinference.span.kind", "openinference"),
    ("traceloop.span.kind", "openllmetry"),
    ("llm.request.type", "openllmetry"),
    ("gen_ai.operation.name", "opentelemetry-genai"),
)
# span names that are a framework's own
NAME_MARKS = frozenset({"agent run", "running tool", "running tools"})

_SCOPE_HINTS = (
    ("strands", "strands"),
    ("pydantic_ai", "pydantic_ai"),
    ("pydantic-ai", "pydantic_ai"),
    ("langgraph", "langgraph"),
    ("langchain", "langchain"),
    ("gcp.vertex.agent", "google_adk"),
    ("google.adk", "google_adk"),
    ("claude_code", "claude_code"),
    ("openai.agents", "openai_agents"),
    ("openai_agents", "openai_agents"),
    ("openai-agents", "openai_agents"),  # AgentOps' library.name
    ("any_agent", "any_agent"),
    ("crewai", "crewai"),
    ("llama_index", "llamaindex"),
    ("smolagents", "smolagents"),
    ("agno", "agno"),
    ("claude_agent_sdk", "claude_agent_sdk"),
    ("autogen", "autogen"),
    ("beeai", "beeai"),
    ("koog", "koog"),
    ("genkit", "genkit"),
    ("langsmith", "langsmith"),  # LangSmith runs and deepeval traces name no framework of
    ("deepeval", "deepeval"),  # their own: the tool that recorded them (formats/records.py)
    ("trulens", "trulens"),
)
# Monocle names the framework in its entity types: "agent.adk", "workflow.langgraph", ...
_MONOCLE_FRAMEWORKS = {
    "adk": "google_adk",
    "crewai": "crewai",
    "openai_agents": "openai_agents",
    "langgraph": "langgraph",
    "langchain": "langchain",
    "microsoft": "microsoft_agent_framework",
    "llamaindex": "llamaindex",
}
_PROVIDER_HINTS = {
    "strands-agents": "strands",
    "langgraph": "langgraph",
    "langchain": "langchain",
    "gcp.vertex.agent": "google_adk",
    "autogen": "autogen",
    "microsoft.agent_framework": "microsoft_agent_framework",
}


class FrameworkDetector:
    """Watches spans one by one and names the framework once it is sure."""

    __slots__ = ("_found", "_scopes", "_weak")

    def __init__(self) -> None:
        self._found = ""
        self._weak = ""
        self._scopes: dict[str, str] = {}

    @property
    def done(self) -> bool:
        """True once a framework's own mark was seen."""
        return bool(self._found)

    def scope_hint(self, scope: str) -> str:
        """The framework a scope name gives away, or ``""`` (cached per scope)."""
        hint = self._scopes.get(scope)
        if hint is None:
            lowered = scope.lower()
            hint = next((found for mark, found in _SCOPE_HINTS if mark in lowered), "")
            self._scopes[scope] = hint
        return hint

    def observe_weak(self, mark: str) -> None:
        """Note a span whose only mark is a convention's (see ``weak_mark``)."""
        if not self._weak:
            self._weak = mark

    def observe(self, name: str, scope: str, attrs: Mapping[str, Any]) -> None:
        """Look at one span for framework marks (``attrs`` holds at least ``DETECT_KEYS``)."""
        provider = attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system")
        if isinstance(provider, str) and provider in _PROVIDER_HINTS:
            self._found = _PROVIDER_HINTS[provider]
            return
        if "any_agent.version" in attrs or name.endswith("[any_agent]"):
            self._found = "any_agent"
            return
        if name.startswith("claude_code."):
            self._found = "claude_code"
            return
        if name in ("agent run", "running tool", "running tools"):
            self._found = "pydantic_ai"
            return
        if scope:
            hint = self.scope_hint(scope)
            if hint:
                self._found = hint
                return
        for entity in _entity_types(attrs):
            if entity.startswith(("agent.", "workflow.")):
                framework = _MONOCLE_FRAMEWORKS.get(entity.partition(".")[2])
                if framework:
                    self._found = framework
                    return
        if not self._weak:
            if "monocle_apptrace.version" in attrs:
                self._weak = "monocle"
            elif "ai.operationId" in attrs:
                self._weak = "vercel_ai"
            elif "openinference.span.kind" in attrs:
                self._weak = "openinference"
            elif "traceloop.span.kind" in attrs or "llm.request.type" in attrs:
                self._weak = "openllmetry"
            elif "gen_ai.operation.name" in attrs:
                self._weak = "opentelemetry-genai"

    def result(self) -> str:
        """The framework name, an instrumentation convention, or ``"unknown"``."""
        return self._found or self._weak or "unknown"


def name_marks(name: str) -> bool:
    """Whether a span name alone can name the framework (see ``observe``)."""
    return name.endswith("[any_agent]") or name.startswith("claude_code.") or name in NAME_MARKS


def weak_mark(keys: frozenset[str] | set[str]) -> str:
    """The convention the attribute keys of a span name, as ``observe`` picks it."""
    return next((mark for key, mark in _WEAK_KEYS if key in keys), "")


def _entity_types(attrs: Mapping[str, Any]) -> list[str]:
    """Monocle's ``entity.N.type`` values, or the types in Okahu's ``entity`` list."""
    found = [attrs.get("entity.1.type"), attrs.get("entity.2.type")]
    entities = attrs.get("entity")
    if isinstance(entities, list):
        found += [item.get("type") for item in entities if isinstance(item, dict)]
    return [kind for kind in found if isinstance(kind, str)]

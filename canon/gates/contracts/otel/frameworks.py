"""Which agent framework (or instrumentation) produced a trace.

A framework's own mark (scope name, provider, a framework-only attribute or span name)
beats an instrumentation convention (OpenInference, OpenLLMetry, plain GenAI semconv),
because instrumentations run under many frameworks (kagent's ADK traces carry OpenLLMetry
``openai.chat`` spans too).
"""

from __future__ import annotations

from canon.gates.contracts.otel.spans import RawSpan

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
    ("any_agent", "any_agent"),
    ("crewai", "crewai"),
    ("llama_index", "llamaindex"),
    ("smolagents", "smolagents"),
    ("agno", "agno"),
)
_PROVIDER_HINTS = {
    "strands-agents": "strands",
    "langgraph": "langgraph",
    "langchain": "langchain",
    "gcp.vertex.agent": "google_adk",
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

    def observe(self, span: RawSpan) -> None:
        """Look at one span for framework marks."""
        attrs = span.attributes
        provider = attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system")
        if isinstance(provider, str) and provider in _PROVIDER_HINTS:
            self._found = _PROVIDER_HINTS[provider]
            return
        if "any_agent.version" in attrs or span.name.endswith("[any_agent]"):
            self._found = "any_agent"
            return
        if span.name.startswith("claude_code."):
            self._found = "claude_code"
            return
        if span.name in ("agent run", "running tool", "running tools"):
            self._found = "pydantic_ai"
            return
        if span.scope:
            hint = self._scopes.get(span.scope)
            if hint is None:
                lowered = span.scope.lower()
                hint = next((name for mark, name in _SCOPE_HINTS if mark in lowered), "")
                self._scopes[span.scope] = hint
            if hint:
                self._found = hint
                return
        if not self._weak:
            if "openinference.span.kind" in attrs:
                self._weak = "openinference"
            elif "traceloop.span.kind" in attrs or "llm.request.type" in attrs:
                self._weak = "openllmetry"
            elif "gen_ai.operation.name" in attrs:
                self._weak = "opentelemetry-genai"

    def result(self) -> str:
        """The framework name, an instrumentation convention, or ``"unknown"``."""
        return self._found or self._weak or "unknown"

"""Prompt caching: the questions about one artifact share one long prefix; mark it where needed.

Every question about an artifact is sent the same system message (for questions with the
same choices), mission, principles and artifact, and differs only from the QUESTION section
on. OpenAI-style providers cache such a prefix on their own. Anthropic caches only what a
request marks with ``cache_control``, charges extra for writing it, and refuses to cache a
prefix below a minimum length, so Canon marks the prefix only when other requests in the run
will read it again and when it is long enough to be cached at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from canon.core.rubric import Question
from canon.judge.litellm_module import model_facts

# Anthropic's smallest cacheable prompt, in tokens; Haiku models need more.
ANTHROPIC_MIN_TOKENS = 1024
ANTHROPIC_HAIKU_MIN_TOKENS = 2048
_SUFFIX_START = "\n\nQUESTION\n"  # where render_prompt's per-question part begins
_MARKER_PROVIDERS = frozenset({"anthropic"})


def prefix_shares(questions: Iterable[Question]) -> dict[str, int]:
    """For each question, how many of the artifact's questions share its prompt prefix.

    The system message lists the choices, so questions share a prefix exactly when they
    offer the same choices in the same order.
    """
    questions = list(questions)
    groups = Counter(tuple(c.label for c in q.choices) for q in questions)
    return {q.id: groups[tuple(c.label for c in q.choices)] for q in questions}


def minimum_cacheable_tokens(model: str) -> int | None:
    """The provider's minimum cacheable prefix, or None when it needs no marker."""
    if model_facts(model).provider not in _MARKER_PROVIDERS:  # litellm is asked once per model
        return None
    return ANTHROPIC_HAIKU_MIN_TOKENS if "haiku" in model.lower() else ANTHROPIC_MIN_TOKENS


def mark_shared_prefix(
    litellm: Any, model: str, messages: list[dict[str, str]], shares: int
) -> Any:
    """``messages`` with the shared prefix marked for caching, when that pays off.

    Returned unchanged for a provider that caches without markers, a prefix no other
    request in the run will read (``shares`` < 2), or one below the provider's minimum.
    """
    minimum = minimum_cacheable_tokens(model) if shares > 1 else None
    if minimum is None or len(messages) != 2:
        return messages
    system, user = messages
    cut = user["content"].rfind(_SUFFIX_START)
    if cut < 0:
        return messages
    prefix, suffix = user["content"][:cut], user["content"][cut:]
    prefix_messages = [system, {"role": "user", "content": prefix}]
    if int(litellm.token_counter(model=model, messages=prefix_messages)) < minimum:
        return messages
    marked = {"type": "text", "text": prefix, "cache_control": {"type": "ephemeral"}}
    return [system, {"role": "user", "content": [marked, {"type": "text", "text": suffix}]}]

"""The decision wires Canon speaks, by name: adding one is a module and a line here."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from canon.judge.decisions import openai_decisions, systemone
from canon.judge.decisions.asking import AskedQuestion, compact
from canon.judge.decisions.validate import WireReply


@dataclass(frozen=True, slots=True)
class Wire:
    """One decision wire: where it is, which key it takes, and how its bodies read."""

    name: str  # the judge_model prefix, ``typesafe:jev-1.13.0``
    path: str  # appended to the API root
    key_variable: str
    root_variable: str
    default_root: str
    aliases: frozenset[str]  # model names that move with releases (pin a versioned id)
    versions: tuple[str, ...]  # the documented versioned models, to pin instead of an alias
    # The published request rate (requests per minute), or None when none is published: a
    # run never sends faster, whatever its concurrency (its limiter still adapts below it).
    per_minute: int | None
    build: Callable[[str, Mapping[str, Any], Sequence[AskedQuestion]], dict[str, Any]]
    read: Callable[[Mapping[str, Any], Sequence[AskedQuestion]], WireReply]
    billed: Callable[[Mapping[str, Any]], list[Any]]  # the parts of a body the model reads

    def tokens(self, body: Mapping[str, Any]) -> int:
        """A call's input tokens before the server counts them, from the parts of ``body``
        the model reads (``billed``): a token per 4 characters of each part as sent (a text
        as it is, anything else as its compact JSON), rounded up per part.

        No wire publishes its tokenizer or what it bills. The one billing rule known is the
        System One reference server's (jevcompat): the compact JSON of the state plus that
        of each question, each // 4, the ids and the model left out (the ids are never shown
        to the model). This counts the same parts and rounds each up, so it never falls
        below that count (and exceeds it by at most one token a part), and it counts nothing
        no model reads: it feeds ``--estimate`` and a ``max_cost`` budget, which must not
        undercount a call."""
        return sum(-(-len(p if isinstance(p, str) else compact(p)) // 4) for p in self.billed(body))


WIRES: dict[str, Wire] = {
    wire.name: wire
    for wire in (
        Wire(
            "typesafe",
            "/v1/systemone",
            "TYPESAFE_API_KEY",
            "TYPESAFE_BASE_URL",
            "https://api.typesafe.ai",
            frozenset({"jev-latest", "jev-preview", "~typesafe/jev-latest"}),
            ("jev-1.13.0", "jev-1.14.0"),
            1200,  # docs.typesafe.ai rate limits: 1,200 requests a minute
            systemone.build,
            systemone.read,
            systemone.billed,
        ),
        Wire(
            "openai-decisions",
            "/decisions",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            frozenset(),
            ("gpt-6-luna",),
            None,  # no Decisions-specific limit is documented at beta
            openai_decisions.build,
            openai_decisions.read,
            openai_decisions.billed,
        ),
    )
}

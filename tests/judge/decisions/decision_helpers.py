"""What the decision-wire tests share: one artifact under one constitution, and a client
call run to completion (loaded with support.helper_modules.load_helper)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from canon.core.artifact import Artifact, Message
from canon.core.constitution import Constitution, Principle
from canon.judge.decisions.asking import AskedQuestion
from canon.judge.decisions.client import DecisionClient
from canon.judge.decisions.validate import DecisionResult

CONSTITUTION = Constitution(
    mission="Resolve billing questions for customers of a small web host.",
    principles=(
        Principle("Never ask a customer for a full card number."),
        Principle("Escalate refunds above $500 to a person.", id="escalate-large-refunds"),
    ),
)
ARTIFACT = Artifact(
    "Please send me your full card number so I can check the charge.",
    input=(Message("user", "Why was I charged twice this month?"),),
    context=("Invoice 1041: two charges of $12 on 3 Nov.",),
)


def decide(
    client: DecisionClient, state: dict[str, Any], asked: Sequence[AskedQuestion]
) -> DecisionResult:
    """One call, run to completion."""
    return asyncio.run(client.decide(state, asked))


def fast(wire: str, model: str, root: str, **options: Any) -> DecisionClient:
    """A client with a short backoff, so retry tests take milliseconds."""
    settings: dict[str, Any] = {"timeout": 2.0, "backoff": 0.01, "max_backoff": 0.05}
    settings.update(options)
    return DecisionClient(wire, model, root=root, **settings)

"""Fixtures for the decision-wire tests: the rubric's questions about one artifact, and a
decision server of the tests' own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from canon.judge.decisions.asking import AskedQuestion, asked_questions, decision_state
from canon.project.store import load_rubric

from support.helper_modules import load_helper

decision_server = load_helper("judge/decisions/decision_server.py")
helpers = load_helper("judge/decisions/decision_helpers.py")


@pytest.fixture(autouse=True)
def _no_provider_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's client sees only the keys and roots the test sets."""
    for name in ("TYPESAFE_API_KEY", "TYPESAFE_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def state() -> dict[str, Any]:
    return decision_state(helpers.CONSTITUTION, helpers.ARTIFACT)


@pytest.fixture
def asked(state: dict[str, Any]) -> tuple[AskedQuestion, ...]:
    return asked_questions(load_rubric().questions_for(helpers.CONSTITUTION), state)


@pytest.fixture
def server() -> Iterator[Any]:
    with decision_server.running() as running:
        yield running

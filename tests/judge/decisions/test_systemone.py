"""The System One client against ``jevcompat mock`` (a third-party reference server of the
wire) on 127.0.0.1: clean answers, every one of its 47 faults, rate limits, and the CLI."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jevcompat.mock import FAULTS, MockConfig, make_server

from canon.core.rubric import Choice, Question
from canon.core.scoring import Answer
from canon.errors import (
    JudgeCredentialError,
    JudgeError,
    JudgeRejectedError,
    JudgeUnavailableError,
)
from canon.judge.decisions.asking import AskedQuestion, asked_questions
from canon.judge.decisions.client import DecisionClient
from canon.judge.decisions.validate import DecisionResult, ProblemKind
from canon.judge.litellm_module import JudgeSetupError

from support.helper_modules import load_helper
from support.network import closed_port

_helpers = load_helper("judge/decisions/decision_helpers.py")
decide = _helpers.decide
fast = _helpers.fast


ODD = Question(  # labels that NFD-normalising or lower-casing would change, one undescribed
    "odd",
    "facet",
    "Is the tone right?",
    (Choice("Yes", 1.0, "fully"), Choice("né", 0.5, "in part"), Choice("no", 0.0, "")),
)


@contextmanager
def serving(config: MockConfig) -> Iterator[str]:
    """jevcompat's mock on a free 127.0.0.1 port (its own ``Running``, polling faster)."""
    server = make_server(config)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _mock(
    faults: Sequence[str] = (),
    asked: Sequence[AskedQuestion] = (),
    state: dict[str, Any] | None = None,
    *,
    server_key: str | None = None,
    client_key: str | None = None,
    model: str = "jev-1.13.0",
    busy_every: int = 0,
) -> tuple[DecisionResult | Exception, int]:
    """One call against a mock with ``faults``: the result (or the error) and how many
    requests the mock received."""
    config = MockConfig(key=server_key, faults=frozenset(faults), busy_every=busy_every)
    with serving(config) as url:
        client = fast("typesafe", model, url, api_key=client_key)
        try:
            outcome: DecisionResult | Exception = decide(client, state or {}, asked)
        except Exception as exc:
            outcome = exc
    return outcome, config.requests


def test_one_call_answers_every_question_in_every_wording(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    result, requests = _mock((), asked, state)
    assert isinstance(result, DecisionResult)
    assert requests == 1
    assert list(result.outcomes) == [item.id for item in asked]
    assert not result.problems()
    for item in asked:
        answer = result.outcomes[item.id]
        assert isinstance(answer, Answer)
        assert set(answer.distribution) == set(item.labels)
        assert sum(answer.distribution.values()) == pytest.approx(1.0)
    # the versioned model the response names, not the one asked for
    assert (result.model, result.requested) == ("jevcompat-mock-0.1", "jev-1.13.0")
    assert result.usage.calls == 1 and result.usage.prompt_tokens > 0
    # the mock is not a listed model: priced by the model asked for ($0.042 / M input)
    assert result.usage.cost == pytest.approx(result.usage.prompt_tokens * 0.042e-6)


def test_answers_follow_the_state(state: dict[str, Any], asked: tuple[AskedQuestion, ...]) -> None:
    first, _ = _mock((), asked, state)
    again, _ = _mock((), asked, state)
    other, _ = _mock((), asked, {**state, "artifact": "Your refund is on its way."})
    assert isinstance(first, DecisionResult) and isinstance(again, DecisionResult)
    assert isinstance(other, DecisionResult)
    assert first.outcomes == again.outcomes  # the mock is deterministic
    assert first.outcomes != other.outcomes  # and the artifact reached it


@dataclass(frozen=True)
class Expect:
    """What Canon does with one jevcompat fault."""

    outcome: str  # credential | setup | rejected | unreadable | unscored | clean | valid
    setup: dict[str, Any]  # _mock keyword arguments that make the fault observable
    problem: ProblemKind | None = None  # for unscored: the problem every hit question has
    words: str = ""  # for errors: what the message must say


_KEYED = {"server_key": "k", "client_key": "k"}
_ODD = {"odd": True}
# Every jevcompat fault, by what Canon does when it meets it. "clean": the fault never
# touches Canon's requests (Canon sends choice questions only, an object state, no extra
# fields), so the answers are the clean server's; "valid": the answers are well-formed but
# depend on something they should not (no single response can show it).
EXPECTED: dict[str, Expect] = {
    "wrong-route": Expect("setup", {}, words="TYPESAFE_BASE_URL"),
    "xssi-200": Expect("unreadable", {}, words="not JSON"),
    "plain-content-type": Expect("clean", {}),
    "text-errors": Expect("rejected", {"model": "jev-9"}, words="Unknown model: jev-9"),
    "models-404": Expect("clean", {}),
    "auth-rejects-header": Expect("credential", {"client_key": "k"}),
    "auth-x-api-key": Expect("credential", _KEYED),
    "auth-plain": Expect("credential", {"server_key": "k"}, words="Unauthorized"),
    "auth-invalid-403-text": Expect(
        "credential", {"server_key": "k", "client_key": "wrong"}, words="bad key"
    ),
    "reject-array-state": Expect("clean", {}),
    "reject-jev-latest": Expect("setup", {"model": "jev-latest"}, words="jev-latest"),
    "first-question-only": Expect("unscored", {}, ProblemKind.MISSING),
    "strict-ids": Expect("rejected", {}, words="Question id must match"),
    "nfd-keys": Expect("unscored", _ODD, ProblemKind.KEYS),
    "forbid-extra": Expect("clean", {}),
    "string-only-text": Expect("clean", {}),
    "noul-two-sided": Expect("clean", {}),
    "noul-needs-instructions": Expect("clean", {}),
    "no-null-description": Expect("rejected", _ODD, words="criteria"),
    "cap-64": Expect("clean", {}),
    "cap-5-levels": Expect("clean", {}),
    "accept-map-score": Expect("clean", {}),
    "no-usage": Expect("unreadable", {}, words="no usage"),
    "float-usage": Expect("unreadable", {}, words="whole number"),
    "extra-answer": Expect("unscored", {}, ProblemKind.EXTRA),
    "boolean-type": Expect("clean", {}),
    "nan": Expect("unreadable", {}, words="NaN"),
    "unprefixed-extra": Expect("clean", {}),
    "noul-range": Expect("clean", {}),
    "choice-no-confidence": Expect("clean", {}),
    "choice-key-case": Expect("unscored", _ODD, ProblemKind.KEYS),
    "choice-sum": Expect("unscored", {}, ProblemKind.SUM),
    "choice-second": Expect("unscored", {}, ProblemKind.CHOICE),
    "score-no-legend": Expect("clean", {}),
    "legend-1-based": Expect("clean", {}),
    "score-keys-1-based": Expect("clean", {}),
    "score-sum": Expect("clean", {}),
    "score-argmax": Expect("clean", {}),
    "confidence-over": Expect("unscored", {}, ProblemKind.MALFORMED),
    "confidence-margin": Expect("clean", {}),  # Canon computes its own confidence
    "500-on-unknown-type": Expect("clean", {}),
    "accept-boolean": Expect("clean", {}),
    "validation-400": Expect("rejected", {"extra": ("strict-ids",)}, words="Question id"),
    "error-flat": Expect("rejected", {"model": "jev-9"}, words="Unknown model: jev-9"),
    "id-leaks": Expect("valid", {}),
    "batch-leaks": Expect("valid", {}),
    "order-leaks": Expect("valid", {}),
}


def test_the_table_covers_every_fault_jevcompat_has() -> None:
    assert set(EXPECTED) == set(FAULTS)
    assert len(FAULTS) == 47


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_every_fault_fails_closed(
    fault: str, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    expect = EXPECTED[fault]
    setup = dict(expect.setup)
    questions = asked
    if setup.pop("odd", False):
        questions = asked_questions((ODD, *(item.question for item in asked[:2])), state)
    faults = (fault, *setup.pop("extra", ()))
    outcome, requests = _mock(faults, questions, state, **setup)
    if expect.outcome in ("clean", "valid"):
        assert isinstance(outcome, DecisionResult), outcome
        assert not outcome.problems()
        if expect.outcome == "clean":
            clean, _ = _mock((), questions, state, **setup)
            assert isinstance(clean, DecisionResult)
            assert outcome.outcomes == clean.outcomes
        return
    if expect.outcome == "unscored":
        assert isinstance(outcome, DecisionResult), outcome
        problems = outcome.problems()
        assert problems, "a faulty answer was counted"
        assert {p.kind for p in problems.values()} == {expect.problem}
        hit = set(problems)
        assert all(not isinstance(outcome.outcomes[key], Answer) for key in hit)
        if fault in ("nfd-keys", "choice-key-case"):
            assert hit == {item.id for item in questions if item.question is ODD}
        if fault == "first-question-only":
            assert hit == {item.id for item in questions[1:]}
        return
    error = {
        "credential": JudgeCredentialError,
        "setup": JudgeSetupError,
        "rejected": JudgeRejectedError,
        "unreadable": JudgeError,
    }[expect.outcome]
    assert type(outcome) is error, outcome
    assert expect.words in str(outcome)
    if expect.outcome == "credential":
        assert "TYPESAFE_API_KEY" in str(outcome) or "api_key" in str(outcome)
    # only an unreadable reply is worth asking again; a setting must change for the rest
    assert requests == 3 if expect.outcome == "unreadable" else requests <= 1
    assert outcome.exit_code == 2 if expect.outcome != "unreadable" else True


def test_a_rate_limit_is_waited_out(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    """jevcompat's busy server: 429 with Retry-After: 0 on every second request."""
    config = MockConfig(busy_every=2)
    with serving(config) as url:
        client = fast("typesafe", "jev-1.13.0", url)

        async def two() -> list[DecisionResult]:
            return [await client.decide(state, asked) for _ in range(2)]

        results = asyncio.run(two())
    assert config.requests == 3  # the second call was refused once, then answered
    assert results[0].outcomes == results[1].outcomes


def test_a_server_that_stays_busy_is_unavailable(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    outcome, requests = _mock((), asked, state, busy_every=1)
    assert isinstance(outcome, JudgeUnavailableError)
    assert outcome.exit_code == 3 and "HTTP 429" in str(outcome) and "slow down" in str(outcome)
    assert requests == 3


def test_the_hosted_api_without_a_key_is_refused_before_any_request() -> None:
    with pytest.raises(JudgeCredentialError, match="set TYPESAFE_API_KEY"):
        DecisionClient("typesafe", "jev-1.13.0")


def test_the_key_and_root_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    config = MockConfig(key="secret")
    with serving(config) as url:
        monkeypatch.setenv("TYPESAFE_BASE_URL", url)
        monkeypatch.setenv("TYPESAFE_API_KEY", "secret")
        result = decide(DecisionClient("typesafe", "jev-latest"), state, asked)
        monkeypatch.setenv("TYPESAFE_API_KEY", "stale")
        with pytest.raises(JudgeCredentialError, match="TYPESAFE_API_KEY"):
            decide(DecisionClient("typesafe", "jev-latest"), state, asked)
    assert not result.problems() and result.requested == "jev-latest"


def test_the_jevcompat_command_line_mock(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    """``jevcompat mock --port P --key K`` as a real process."""
    port = closed_port()
    command = Path(sys.executable).with_name("jevcompat")
    process = subprocess.Popen(
        [str(command), "mock", "--port", str(port), "--key", "K"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "jevcompat mock did not start"
                time.sleep(0.05)
        client = fast("typesafe", "jev-1.13.0", f"http://127.0.0.1:{port}", api_key="K")
        result = decide(client, state, asked)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert len(result.answers()) == len(asked)

"""The OpenAI Decisions client against a server the tests start (built from the wire
reference), and the failures both wires share, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from canon.core.scoring import Answer
from canon.errors import (
    JudgeCredentialError,
    JudgeError,
    JudgeRejectedError,
    JudgeUnavailableError,
)
from canon.judge.concurrency import AdaptiveLimiter
from canon.judge.decisions.asking import AskedQuestion
from canon.judge.decisions.client import DecisionClient
from canon.judge.decisions.validate import DecisionResult, ProblemKind
from canon.judge.litellm_module import JudgeSetupError

from support.helper_modules import load_helper
from support.network import closed_port

_helpers = load_helper("judge/decisions/decision_helpers.py")
ARTIFACT = _helpers.ARTIFACT
decide = _helpers.decide
fast = _helpers.fast

# (judge_model wire, model, the root under the server's URL, the key variable)
WIRES = {
    "openai-decisions": ("gpt-6-luna", "/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "typesafe": ("jev-1.13.0", "", "TYPESAFE_API_KEY", "TYPESAFE_BASE_URL"),
}


def _client(server: Any, wire: str = "openai-decisions", **options: Any) -> DecisionClient:
    model, suffix, _, _ = WIRES[wire]
    options.setdefault("api_key", "sk-test")
    return fast(wire, model, server.url + suffix, **options)


def _attempt(client: DecisionClient, state: dict[str, Any], asked: Any) -> Any:
    try:
        return decide(client, state, asked)
    except Exception as exc:
        return exc


def test_one_call_carries_the_state_and_every_question(
    server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    result = decide(_client(server), state, asked)
    (body,) = server.requests
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert set(body) == {"model", "input", "questions"} and body["model"] == "gpt-6-luna"
    sent = json.loads(body["input"].split("\n", 1)[1])
    assert sent == state
    assert ARTIFACT.text in body["input"] and "charged twice" in body["input"]
    assert [q["name"] for q in body["questions"]] == [item.id for item in asked]
    first = body["questions"][0]
    assert first["type"] == "choice" and first["instructions"] == asked[0].instructions
    assert first["choices"] == [
        {"value": c.label, "description": c.meaning} for c in asked[0].options
    ]
    assert not result.problems() and len(result.answers()) == len(asked)
    assert result.model == "gpt-6-luna"
    assert result.usage.calls == 1 and result.usage.prompt_tokens == 420
    assert result.usage.cost == pytest.approx(420 * 0.10e-6)


def test_the_system_one_body(
    server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    decide(_client(server, "typesafe"), state, asked)
    (body,) = server.requests
    assert body["state"] == state
    question = body["questions"][asked[0].id]
    assert question == {
        "type": "choice",
        "instructions": asked[0].instructions,
        "criteria": {c.label: c.meaning for c in asked[0].options},
    }


def test_an_alias_reports_the_versioned_model_that_answered(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    with _helpers_server(model="jev-1.13.0") as server:
        client = fast("typesafe", "jev-latest", server.url)
        result = decide(client, state, asked)
    assert (result.requested, result.model) == ("jev-latest", "jev-1.13.0")
    assert client.alias and not fast("typesafe", "jev-1.13.0", "http://127.0.0.1:1").alias
    assert result.usage.cost == pytest.approx(420 * 0.042e-6)


def test_an_unlisted_model_has_an_unknown_cost_never_zero(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    with _helpers_server(model="acme-decider-2") as server:
        result = decide(fast("typesafe", "acme-decider-2", server.url), state, asked)
    assert result.usage.cost is None and result.usage.prompt_tokens == 420


def _helpers_server(**settings: Any) -> Any:
    server = load_helper("judge/decisions/decision_server.py")
    return server.running(server.DecisionServer(**settings))


def _answers(body: dict[str, Any]) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = body["answers"]
    return answers


def _refuse_first(body: dict[str, Any]) -> dict[str, Any]:
    _answers(body)[0] = {"type": "refusal", "name": _answers(body)[0]["name"]}
    return body


def _drop_first(body: dict[str, Any]) -> dict[str, Any]:
    del _answers(body)[0]
    return body


def _repeat_first(body: dict[str, Any]) -> dict[str, Any]:
    _answers(body).append(dict(_answers(body)[0]))
    return body


def _rename_first(body: dict[str, Any]) -> dict[str, Any]:
    _answers(body)[0]["name"] = None
    return body


def _first_probabilities(change: Callable[[list[dict[str, Any]]], None]) -> Any:
    def tamper(body: dict[str, Any]) -> dict[str, Any]:
        change(_answers(body)[0]["probabilities"])
        return body

    return tamper


def _boolean_value(probabilities: list[dict[str, Any]]) -> None:
    probabilities[0]["value"] = True


def _inflate(probabilities: list[dict[str, Any]]) -> None:
    probabilities[0]["probability"] += 0.3


def _not_argmax(body: dict[str, Any]) -> dict[str, Any]:
    first = _answers(body)[0]
    first["choice"] = min(first["probabilities"], key=lambda p: p["probability"])["value"]
    return body


def _probabilities_as_map(body: dict[str, Any]) -> dict[str, Any]:
    first = _answers(body)[0]
    first["probabilities"] = {p["value"]: p["probability"] for p in first["probabilities"]}
    return body


@pytest.mark.parametrize(
    ("tamper", "kind", "only_first"),
    [
        (_refuse_first, ProblemKind.REFUSED, True),
        (_drop_first, ProblemKind.MISSING, True),
        (_repeat_first, ProblemKind.EXTRA, True),
        (_rename_first, ProblemKind.EXTRA, False),  # an answer to no asked id: none count
        (_first_probabilities(_boolean_value), ProblemKind.KEYS, True),
        (_first_probabilities(_inflate), ProblemKind.SUM, True),
        (_not_argmax, ProblemKind.CHOICE, True),
        (_probabilities_as_map, ProblemKind.MALFORMED, True),
    ],
)
def test_a_bad_answer_leaves_its_question_unscored(
    tamper: Any,
    kind: ProblemKind,
    only_first: bool,
    server: Any,
    state: dict[str, Any],
    asked: tuple[AskedQuestion, ...],
) -> None:
    server.tamper = tamper
    result = decide(_client(server), state, asked)
    problems = result.problems()
    assert {p.kind for p in problems.values()} == {kind}
    hit = {asked[0].id} if only_first else {item.id for item in asked}
    assert set(problems) == hit
    assert all(isinstance(result.outcomes[item.id], Answer) for item in asked if item.id not in hit)
    assert len(server.requests) == 1  # a well-formed reply: asking again repeats it


@pytest.mark.parametrize("wire", sorted(WIRES))
@pytest.mark.parametrize(
    ("status", "error", "words"),
    [
        ("401", JudgeCredentialError, "Incorrect API key"),
        ("403", JudgeCredentialError, "Must supply an API key"),
        ("404", JudgeSetupError, "Not found"),
        ("400", JudgeRejectedError, "Invalid request"),
        ("422", JudgeRejectedError, "Input should be a valid dictionary"),
    ],
)
def test_a_status_only_a_setting_can_fix_stops_at_once(
    wire: str,
    status: str,
    error: type[Exception],
    words: str,
    server: Any,
    state: dict[str, Any],
    asked: tuple[AskedQuestion, ...],
) -> None:
    server.always = status
    outcome = _attempt(_client(server, wire, api_key=None), state, asked)
    assert type(outcome) is error and words in str(outcome)
    assert getattr(outcome, "exit_code", None) == 2
    _, _, key, root = WIRES[wire]
    if error is JudgeCredentialError:
        assert f"set {key}" in str(outcome)
    if error is JudgeSetupError:
        assert root in str(outcome)
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", sorted(WIRES))
@pytest.mark.parametrize("fault", ["429", "500", "502", "503", "529", "drop", "garbage"])
def test_a_passing_failure_is_retried(
    wire: str, fault: str, server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    server.faults = [fault, fault]
    result = decide(_client(server, wire), state, asked)
    assert len(server.requests) == 3 and not result.problems()
    # the refused attempts are no calls; an unreadable 200 was billed at an unknown price
    assert result.usage.calls == (3 if fault == "garbage" else 1)
    assert (result.usage.cost is None) is (fault == "garbage")


@pytest.mark.parametrize("wire", sorted(WIRES))
@pytest.mark.parametrize("fault", ["429", "503", "529", "500", "drop"])
def test_a_lasting_outage_is_unavailable_exit_3(
    wire: str, fault: str, server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    server.always = fault
    outcome = _attempt(_client(server, wire), state, asked)
    assert isinstance(outcome, JudgeUnavailableError) and outcome.exit_code == 3
    assert "after 3 attempt(s)" in str(outcome) and len(server.requests) == 3


def test_an_unreadable_body_ends_as_an_unscored_call_not_an_outage(
    server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    server.always = "garbage"
    outcome = _attempt(_client(server), state, asked)
    assert type(outcome) is JudgeError and "not JSON" in str(outcome)
    assert outcome.usage.calls == 3 and outcome.usage.cost is None


def test_a_timeout_is_named_as_one(
    server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    server.always = "hang"
    outcome = _attempt(_client(server, timeout=0.3, max_attempts=2), state, asked)
    assert isinstance(outcome, JudgeUnavailableError)
    assert "timed out: no reply within 0.3 s" in str(outcome)


def test_nothing_listening_is_unavailable(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    client = fast("openai-decisions", "gpt-6-luna", f"http://127.0.0.1:{closed_port()}/v1")
    outcome = _attempt(client, state, asked)
    assert isinstance(outcome, JudgeUnavailableError) and "could not reach" in str(outcome)


@pytest.mark.parametrize("header", ["retry_after", "retry_after_ms"])
def test_retry_after_is_honoured(
    header: str, server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    setattr(server, header, "0.4" if header == "retry_after" else "400")
    server.faults = ["429"]
    started = time.monotonic()
    result = decide(_client(server), state, asked)  # its own backoff is 0.01 s
    assert time.monotonic() - started >= 0.4 and not result.problems()


def test_the_limiter_hears_of_an_overload(
    server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    server.faults = ["529"]
    limiter = AdaptiveLimiter(8, initial=4)

    async def call() -> DecisionResult:
        async with limiter:
            return await _client(server).decide(state, asked)

    asyncio.run(call())
    assert limiter.shrinks == 1 and limiter.limit < 4


def test_an_unknown_wire_or_empty_model_is_a_usage_error() -> None:
    with pytest.raises(Exception, match="unknown decision wire 'jev'; known: openai-decisions"):
        DecisionClient("jev", "jev-1.13.0", root="http://127.0.0.1:1")
    with pytest.raises(Exception, match="needs a model name"):
        DecisionClient("typesafe", " ", root="http://127.0.0.1:1")


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_root_that_names_the_endpoint_is_used_as_given(
    wire: str, server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    """OpenRouter's System One endpoint is ``…/api/alpha/decisions``: no path to append."""
    model, _, _, _ = WIRES[wire]
    path = "/v1/decisions" if wire == "openai-decisions" else "/v1/systemone"
    client = fast(wire, model, server.url + path + "/")
    assert client.url == server.url + path
    assert not decide(client, state, asked).problems()


@pytest.mark.parametrize("fault", [None, "429", "drop", "hang", "garbage"])
def test_the_httpx_transport_fails_the_same_way(
    fault: str | None, server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    """An https root (or a proxy) goes through httpx rather than the plain-http client."""
    client = _client(server, timeout=0.3, max_attempts=2)
    client._endpoint.plain = False
    if fault is not None:
        server.faults = [fault]
    result = decide(client, state, asked)
    assert not result.problems() and len(server.requests) == (1 if fault is None else 2)
    server.always = "hang"
    outcome = _attempt(client, state, asked)
    assert isinstance(outcome, JudgeUnavailableError) and "timed out" in str(outcome)


def test_calls_in_flight_together_each_get_their_own_answers(
    server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    client = _client(server)
    states = [{**state, "artifact": f"Reply number {n}."} for n in range(8)]

    async def all_at_once() -> list[DecisionResult]:
        return await asyncio.gather(*(client.decide(s, asked) for s in states))

    results = asyncio.run(all_at_once())
    alone = [decide(_client(server), s, asked) for s in states]
    assert [r.outcomes for r in results] == [r.outcomes for r in alone]
    assert len({json.dumps(r.answers()[asked[0].id].distribution) for r in results}) > 1


def test_a_refused_key_stays_refused_without_another_request(
    server: Any, state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    server.faults = ["401"]
    client = _client(server)
    first, second = _attempt(client, state, asked), _attempt(client, state, asked)
    assert isinstance(first, JudgeCredentialError) and isinstance(second, JudgeCredentialError)
    assert str(second) == str(first) and len(server.requests) == 1

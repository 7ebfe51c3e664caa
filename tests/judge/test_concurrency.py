"""The adaptive in-flight limit and the outage breaker, alone and against real HTTP servers."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.check.runner import ScoringPlan, score_artifacts
from canon.cli import main
from canon.core.artifact import Artifact
from canon.errors import JudgeUnavailableError
from canon.judge.concurrency import AdaptiveLimiter
from canon.project.store import load_rubric

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _plan(constitution, judge) -> ScoringPlan:
    return ScoringPlan(constitution=constitution, rubric=load_rubric(), judge=judge, threshold=0.85)


def _artifacts(count: int) -> list[Artifact]:
    return [Artifact(f"I refunded duplicate charge number {i}.", id=f"a{i}") for i in range(count)]


def test_the_limit_doubles_per_round_trip_until_the_maximum():
    limiter = AdaptiveLimiter(8)
    assert limiter.limit == 1
    for expected in (2, 3, 4, 5, 6, 7, 8, 8):
        limiter.succeeded(time.monotonic(), timeout=30)
        assert limiter.limit == expected


def test_a_429_halves_the_limit_once_per_round_trip_and_holds_calls_for_retry_after():
    async def scenario() -> tuple[float, float, float]:
        limiter = AdaptiveLimiter(16, initial=16)
        sent = time.monotonic()
        await asyncio.sleep(0.001)
        limiter.overloaded(sent, retry_after=0.3)
        limiter.overloaded(sent, retry_after=0.3)  # sent before the shrink: no second halving
        after_one = limiter.limit
        started = time.monotonic()
        async with limiter:
            waited = time.monotonic() - started
        limiter.overloaded(time.monotonic())
        return after_one, waited, limiter.limit

    after_one, waited, after_two = asyncio.run(scenario())
    assert after_one == 8
    assert waited >= 0.29
    assert after_two == 4


def test_the_limit_never_falls_below_one_and_grows_back_slowly_after_a_shrink():
    limiter = AdaptiveLimiter(4, initial=4)
    for _ in range(5):
        limiter.overloaded(time.monotonic())
        time.sleep(0.002)
    assert limiter.limit == 1
    limiter.succeeded(time.monotonic(), timeout=30)
    assert limiter.limit == 2  # additive now: +1 per round trip of `limit` replies
    limiter.succeeded(time.monotonic(), timeout=30)
    assert limiter.limit == 2.5


def test_a_reply_slower_than_a_quarter_of_the_timeout_shrinks_the_limit():
    limiter = AdaptiveLimiter(8, initial=8)
    limiter.succeeded(time.monotonic() - 3.0, timeout=10)
    assert limiter.limit == 4


def test_at_most_limit_slots_are_held_at_once():
    async def scenario() -> int:
        limiter = AdaptiveLimiter(3, initial=3)

        async def one() -> None:
            async with limiter:
                await asyncio.sleep(0.01)

        await asyncio.gather(*(one() for _ in range(20)))
        return limiter.peak

    assert asyncio.run(scenario()) == 3


def test_a_tripped_breaker_fails_waiting_and_later_calls_at_once():
    async def scenario() -> list[BaseException | None]:
        limiter = AdaptiveLimiter(1)
        outcomes: list[BaseException | None] = []

        async def one() -> None:
            try:
                async with limiter:
                    await asyncio.sleep(0.05)
                outcomes.append(None)
            except JudgeUnavailableError as exc:
                outcomes.append(exc)

        tasks = [asyncio.create_task(one()) for _ in range(3)]
        await asyncio.sleep(0.01)
        for _ in range(3):
            limiter.failed(outage_window=0)
        await asyncio.gather(*tasks)
        with pytest.raises(JudgeUnavailableError, match="failed 3 calls in a row"):
            await limiter.acquire()
        return outcomes

    outcomes = asyncio.run(scenario())
    assert outcomes.count(None) == 1  # the call already in flight finishes
    assert sum(isinstance(o, JudgeUnavailableError) for o in outcomes) == 2


def test_failures_trip_the_breaker_only_after_the_outage_window():
    limiter = AdaptiveLimiter(4)
    for _ in range(10):
        limiter.failed(outage_window=60)
    assert limiter.tripped is None
    limiter.succeeded(time.monotonic(), timeout=30)
    limiter.failed(outage_window=0)
    limiter.failed(outage_window=0)
    assert limiter.tripped is None  # a success in between resets the count
    limiter.failed(outage_window=0)
    assert limiter.tripped is not None


def test_a_one_slot_server_at_the_default_concurrency_is_not_flooded(
    fake_llm, make_judge, constitution
):
    # Eight requests queued behind one slot would take 8 x 0.4 s, past the 2.5 s timeout
    # (the control below). The limiter starts at one and halves when replies show queueing,
    # so fewer wait at the server and every question is answered at the default retries.
    # The fake server shares this process, so on a loaded machine its timing wobbles: the
    # bounds leave room for that (the real one-slot llama.cpp server is tested at default
    # settings in test_local_model.py).
    fake_llm.limit_slots(1, latency=0.4)
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    judge = make_judge(timeout=2.5)
    limiter = AdaptiveLimiter(8)
    results = asyncio.run(
        score_artifacts(_plan(constitution, judge), _artifacts(1), limiter=limiter)
    )
    seen = (limiter.peak, limiter.shrinks, fake_llm.peak_waiting)
    assert [c.error for r in results for c in r.unscored] == [], seen
    assert limiter.shrinks >= 1, seen  # it saw the queueing and backed off
    assert fake_llm.peak_waiting < 7, seen  # seven wait at once without the limiter


def test_without_adapting_the_same_server_times_out(fake_llm, make_judge, constitution):
    # The control for the test above: eight in flight from the start, as before this limiter.
    fake_llm.limit_slots(1, latency=0.4)
    fake_llm.script("", "ANSWER: yes")
    judge = make_judge(timeout=2.5, max_attempts=1)
    limiter = AdaptiveLimiter(8, initial=8)
    results = asyncio.run(
        score_artifacts(_plan(constitution, judge), _artifacts(1), limiter=limiter)
    )
    assert any("no reply within" in (c.error or "") for r in results for c in r.unscored)
    assert limiter.shrinks >= 1  # and the timeouts did shrink the limit


def test_a_rate_limited_endpoint_shrinks_the_shared_limit_and_every_question_is_answered(
    fake_llm, make_judge, constitution
):
    fake_llm.retry_after = "0.2"
    fake_llm.script("", "ANSWER: yes", faults=["429", "429", "429"])
    limiter = AdaptiveLimiter(8, initial=8)
    started = time.monotonic()
    results = asyncio.run(
        score_artifacts(_plan(constitution, make_judge()), _artifacts(1), limiter=limiter)
    )
    assert not results[0].unscored
    assert limiter.shrinks >= 1 and limiter.limit < 8
    assert time.monotonic() - started >= 0.2  # Retry-After was honoured


def test_a_judge_that_never_answers_costs_a_bounded_time(fake_llm, make_judge, constitution):
    fake_llm.script("", always="hang")
    judge = make_judge(timeout=0.3, max_attempts=3)
    started = time.monotonic()
    results = asyncio.run(score_artifacts(_plan(constitution, judge), _artifacts(3)))
    elapsed = time.monotonic() - started
    errors = [c.error or "" for r in results for c in r.unscored]
    assert len(errors) == 30  # every question unscored, none passed
    assert any("judge calls stopped" in e for e in errors)
    # 30 questions one timeout each would be 9 s; the breaker stops it after ~3 timeouts.
    assert elapsed < 5.0
    assert len(fake_llm.requests) <= 6


def test_canon_check_against_a_judge_that_never_answers_exits_3_quickly(
    tmp_path, fake_llm, monkeypatch
):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    (project / "canon.yaml").write_text(
        "judge_model: openai:fake-judge\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\njudge_options:\n  timeout: 0.3\n"
    )
    monkeypatch.chdir(project)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_llm.script("", always="hang")
    started = time.monotonic()
    result = CliRunner().invoke(main, ["score", "--quiet"])
    assert result.exit_code == 3, result.output
    assert time.monotonic() - started < 6.0

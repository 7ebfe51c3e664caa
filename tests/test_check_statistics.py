"""Seeded simulations of the check's decision rule: false alarms and power, with margins.

A fixed seed makes every outcome here deterministic, so these cannot flake; the margins
leave room for the rule to change a little without the test going red for no reason.
The full measurement (200+ trials per row, with Wilson intervals) is
benchmarks/bench_check_statistics.py.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import pytest

from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.constitution import Constitution, Principle
from canon.core.scoring import Answer
from canon.judge.base import JudgeRequest
from canon.project.store import load_rubric

RUBRIC = load_rubric()
CONSTITUTION = Constitution(
    "Answer billing questions within the handbook.",
    tuple(Principle(f"Principle number {i}.") for i in range(1, 6)),
)


@dataclass
class FlippingJudge:
    """The true label, or with probability ``flip`` another valid choice."""

    violated: frozenset[str]  # artifact ids whose P3 is truly violated
    flip: float
    rng: random.Random
    calls: int = field(default=0)
    contradicts: frozenset[str] = frozenset()  # artifact ids whose gate truly trips

    @property
    def name(self) -> str:
        return "flipping"

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        q = request.question
        true = "no" if q.id == "G" else "yes"
        if q.id == "P3" and request.artifact.id in self.violated:
            true = "no"
        if q.id == "G" and request.artifact.id in self.contradicts:
            true = "yes"
        label = true
        if self.rng.random() < self.flip:
            label = self.rng.choice([c.label for c in q.choices if c.label != true])
        return Answer({label: 1.0})


def _trial(
    seed: int,
    violated: frozenset[str],
    size: int = 30,
    *,
    failing: frozenset[str] = frozenset(),
    contradicts: frozenset[str] = frozenset(),
    flip: float = 0.05,
    reword: bool = True,
) -> tuple[bool, set[str], float]:
    """Accept (two looks per answer) and check as the CLI does; texts reworded between."""
    rng = random.Random(seed)
    artifacts = [Artifact(f"Reply {i}.", id=f"a{i}") for i in range(size)]
    accept_judge = FlippingJudge(failing, flip, rng, contradicts=contradicts & failing)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, accept_judge, 0.85)
    baseline = baseline_from_run(plan, asyncio.run(score_run(plan, artifacts, record=True)))
    check_judge = FlippingJudge(failing | violated, flip, rng, contradicts=contradicts)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, check_judge, 0.85)
    if reword:
        artifacts = [Artifact(f"Reply {i}, said anew.", id=f"a{i}") for i in range(size)]
    outcome = asyncio.run(check_run(plan, artifacts, baseline))
    c = outcome.comparison
    named = {n.key for n in c.failures} | {f.key for f in c.regressions}
    overhead = (check_judge.calls - size * 11) / (size * 11)
    # CI fails on exit 1 and on exit 6 (a check that could not tell is not a pass)
    return c.status in ("regressed", "inconclusive"), named, overhead


def test_an_unchanged_suite_rarely_fails_and_confirmation_is_cheap():
    trials = [_trial(1000 + i, frozenset()) for i in range(40)]
    false_alarms = sum(failed for failed, _, _ in trials)
    assert false_alarms <= 3  # the rule allows 5 %; with this seed none is expected
    assert max(overhead for _, _, overhead in trials) < 0.5  # over one pass of the suite


def test_a_principle_violated_in_five_artifacts_is_caught_naming_only_those():
    violated = frozenset(f"a{i}" for i in range(5))
    trials = [_trial(2000 + i, violated) for i in range(40)]
    caught = sum(failed and bool(named) and named <= violated for failed, named, _ in trials)
    assert caught >= 36


@pytest.mark.parametrize("size", [1, 2, 5, 10])
def test_a_small_suite_does_not_fail_on_noise(size):
    # 6.3: equal score moves on two artifacts once read as p = 0 (10 of 70 checks failed)
    trials = [_trial(3000 + size * 100 + i, frozenset(), size, flip=0.15) for i in range(30)]
    assert sum(failed for failed, _, _ in trials) <= 2  # 5 % allowed; none seen with this seed


@pytest.mark.parametrize("reword", [False, True])
def test_a_suite_holding_real_failures_does_not_fail_unchanged(reword):
    # 8: 30 % of the artifacts fail in truth (P3 "no", half of them contradicting too)
    failing = frozenset(f"a{i}" for i in range(9))
    contradicts = frozenset(f"a{i}" for i in range(0, 9, 2))
    trials = [
        _trial(4000 + i, frozenset(), failing=failing, contradicts=contradicts, reword=reword)
        for i in range(20)
    ]
    # 5 % allowed; with these seeds none fails unchanged and one of 20 fails reworded
    assert sum(failed for failed, _, _ in trials) <= 2


def test_one_new_contradiction_among_thirty_is_caught():
    # 5: the gate of a changed artifact gets a second look, so one passing answer is not all
    trials = [_trial(5000 + i, frozenset(), contradicts=frozenset({"a7"})) for i in range(20)]
    caught = sum(named == {"a7"} for _, named, _ in trials)
    assert caught >= 18  # the benchmark measures the rate; all 20 caught with this seed

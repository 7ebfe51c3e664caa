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

    @property
    def name(self) -> str:
        return "flipping"

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        q = request.question
        true = "no" if q.id == "G" else "yes"
        if q.id == "P3" and request.artifact.id in self.violated:
            true = "no"
        label = true
        if self.rng.random() < self.flip:
            label = self.rng.choice([c.label for c in q.choices if c.label != true])
        return Answer({label: 1.0})


def _trial(seed: int, violated: frozenset[str], size: int = 30) -> tuple[bool, set[str], float]:
    rng = random.Random(seed)
    artifacts = [Artifact(f"Reply {i}.", id=f"a{i}") for i in range(size)]
    accept_judge = FlippingJudge(frozenset(), 0.05, rng)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, accept_judge, 0.85)
    baseline = baseline_from_run(plan, asyncio.run(score_run(plan, artifacts)))
    check_judge = FlippingJudge(violated, 0.05, rng)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, check_judge, 0.85)
    outcome = asyncio.run(check_run(plan, artifacts, baseline))
    c = outcome.comparison
    named = {n.key for n in c.failures} | {f.key for f in c.regressions}
    overhead = (check_judge.calls - size * 11) / accept_judge.calls
    return c.failed, named, overhead


def test_an_unchanged_suite_rarely_fails_and_confirmation_is_cheap():
    trials = [_trial(1000 + i, frozenset()) for i in range(40)]
    false_alarms = sum(failed for failed, _, _ in trials)
    assert false_alarms <= 3  # the rule allows 5 %; with this seed none is expected
    assert max(overhead for _, _, overhead in trials) < 0.5


def test_a_principle_violated_in_five_artifacts_is_caught_naming_only_those():
    violated = frozenset(f"a{i}" for i in range(5))
    trials = [_trial(2000 + i, violated) for i in range(40)]
    caught = sum(failed and bool(named) and named <= violated for failed, named, _ in trials)
    assert caught >= 36

"""A judge whose misreadings stick to the item: replicates keep the check honest (seeded)."""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.comparison import Comparison
from canon.core.constitution import Constitution, Principle
from canon.core.scoring import Answer
from canon.judge.base import JudgeRequest
from canon.project.store import load_rubric

RUBRIC = load_rubric()
CONSTITUTION = Constitution(
    "Resolve billing questions within the handbook.",
    (Principle("Quote only the handbook."), Principle("Hand refunds above 200 EUR to a person.")),
)

Truth = Callable[[str, str], str]


def clean(_artifact: str, question: str) -> str:
    return "no" if question == "G" else "yes"


def contradiction(artifact: str, question: str) -> str:
    if artifact == "a000" and question in ("G", "P2"):
        return "yes" if question == "G" else "no"
    return clean(artifact, question)


@dataclass
class StickyJudge:
    """Misreads an item (text, question) with probability p; each ask repeats it with s."""

    truth: Truth
    p: float
    s: float
    seed: int
    misread: frozenset[tuple[str, str]] = frozenset()  # items misread whatever p says
    rng: random.Random = field(init=False)
    name: str = "sticky"

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    async def answer(self, request: JudgeRequest) -> Answer:
        question, text = request.question, request.artifact.text
        true = self.truth(request.artifact.id or "", question.id)
        fate = random.Random(hashlib.sha256(f"{self.seed}|{text}|{question.id}".encode()).digest())
        if fate.random() >= self.p and (text, question.id) not in self.misread:
            return Answer({true: 1.0})
        wrong = fate.choice([c.label for c in question.choices if c.label != true])
        return Answer({wrong if self.rng.random() < self.s else true: 1.0})


def _suite(size: int, run: int, replicates: int) -> list[Artifact]:
    suite = []
    for i in range(size):
        texts = tuple(f"Reply {i}, run {run}, response {j}." for j in range(replicates))
        suite.append(Artifact(texts[0], id=f"a{i:03d}", replicates=texts[1:]))
    return suite


def _check(accept: StickyJudge, check: StickyJudge, *, size: int, replicates: int) -> Comparison:
    plan = ScoringPlan(CONSTITUTION, RUBRIC, accept, 0.85)
    baseline = baseline_from_run(plan, asyncio.run(score_run(plan, _suite(size, 0, replicates))))
    plan = ScoringPlan(CONSTITUTION, RUBRIC, check, 0.85)
    return asyncio.run(check_run(plan, _suite(size, 1, replicates), baseline)).comparison


def _named(comparison: Comparison) -> set[str]:
    return {n.key for n in comparison.failures} | {f.key for f in comparison.regressions}


def test_one_response_a_sticky_misreading_of_the_gate_fails_the_check():
    # the failure replicates fix: the misread text confirms itself on every re-ask
    misread = frozenset({("Reply 3, run 1, response 0.", "G")})
    found = _check(
        StickyJudge(clean, 0.0, 1.0, 1),
        StickyJudge(clean, 0.0, 1.0, 2, misread),
        size=5,
        replicates=1,
    )
    assert found.status == "regressed" and _named(found) == {"a003"}


def test_with_replicates_two_misread_responses_of_three_do_not_fail_the_check():
    misread = frozenset(
        {("Reply 3, run 1, response 0.", "G"), ("Reply 3, run 1, response 1.", "G")}
    )
    found = _check(
        StickyJudge(clean, 0.0, 1.0, 1),
        StickyJudge(clean, 0.0, 1.0, 2, misread),
        size=5,
        replicates=3,
    )
    assert found.status == "conforms", found


def test_with_replicates_a_contradiction_in_every_response_is_caught():
    found = _check(
        StickyJudge(clean, 0.0, 1.0, 1),
        StickyJudge(contradiction, 0.0, 1.0, 2),
        size=5,
        replicates=3,
    )
    assert found.status == "regressed" and _named(found) == {"a000"}


def test_seeded_sticky_noise_with_three_replicates_meets_both_targets():
    # p = 5 %, s = 0.85, texts reworded every run. The benchmark measures the rates with
    # Wilson intervals (0/100 false alarms, 92/100 caught at 30 artifacts); here fixed seeds
    # and wide margins: at most 1 false alarm in 12 runs, at least 9 of 12 plants caught.
    false_alarms = caught = 0
    for trial in range(12):
        seed = 7000 + 2 * trial
        aa = _check(
            StickyJudge(clean, 0.05, 0.85, seed),
            StickyJudge(clean, 0.05, 0.85, seed + 1),
            size=10,
            replicates=3,
        )
        false_alarms += aa.status == "regressed"
        planted = _check(
            StickyJudge(clean, 0.05, 0.85, seed),
            StickyJudge(contradiction, 0.05, 0.85, seed + 1),
            size=10,
            replicates=3,
        )
        caught += planted.status == "regressed" and "a000" in _named(planted)
    assert false_alarms <= 1
    assert caught >= 9


def test_one_response_misreadings_both_ways_make_the_check_inconclusive_not_red():
    # Accept misread the gate of a001 and a002 (recorded non-canon); check misreads a003
    # and a004 instead: two out, two back in, so the check cannot call it a regression.
    texts = ("Reply {}, run 0, response 0.", "Reply {}, run 1, response 0.")
    found = _check(
        StickyJudge(clean, 0.0, 1.0, 1, frozenset({(texts[0].format(i), "G") for i in (1, 2)})),
        StickyJudge(clean, 0.0, 1.0, 2, frozenset({(texts[1].format(i), "G") for i in (3, 4)})),
        size=6,
        replicates=1,
    )
    assert _named(found) == {"a003", "a004"}
    assert found.status == "inconclusive"
    assert any("2 back to passing (a001, a002)" in reason for reason in found.inconclusive)

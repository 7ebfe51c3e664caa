"""How often ``canon check`` fails an unchanged suite, and how often it catches a real change.

A seeded noisy judge answers every question with its true label, except that with
probability ``f`` (independently per call) it answers another valid choice instead. In
"deterministic" mode it behaves like a model at temperature 0: the same prompt always gets
the same answer, so only a changed wording (or a re-ask variant, sampled afresh) draws anew.

Each trial runs the library functions the CLI uses (score and confirm, record the baseline
through its JSON form, then check) with default settings (samples 1, threshold 0.85,
tolerance 0.02, alpha 0.05). Rates are printed with 95 % Wilson intervals.

    .venv/bin/python benchmarks/bench_check_statistics.py [--trials 200] [--flip 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.baseline import baseline_from_data, baseline_to_data
from canon.core.constitution import Constitution, Principle
from canon.core.evidence import DecisionRule
from canon.core.scoring import Answer
from canon.core.stats import wilson_ci
from canon.judge.base import JudgeRequest
from canon.project.store import load_rubric

CONSTITUTION = Constitution(
    "Resolve customers' billing questions accurately and within the handbook.",
    tuple(
        Principle(text)
        for text in (
            "Quote only policies that exist in the billing handbook.",
            "Hand any refund above 200 EUR to a human agent.",
            "Never ask for a full card number.",
            "Say plainly when a question is outside billing.",
            "Confirm the amount before promising a refund.",
        )
    ),
)
RUBRIC = load_rubric()
QUESTIONS = RUBRIC.questions_for(CONSTITUTION)  # 5 facets, the gate, 5 principles: 11

Truth = Callable[[str, str], str]  # (artifact id, question id) -> true label


def clean(_artifact: str, question: str) -> str:
    """Every facet and principle satisfied, no contradiction."""
    return "no" if question == "G" else "yes"


@dataclass
class NoisyJudge:
    """Answers the true label, or with probability ``flip`` another valid choice."""

    truth: Truth
    flip: float
    seed: int
    deterministic: bool = False
    calls: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def name(self) -> str:
        return "noisy-bench-judge"

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        question = request.question
        artifact_id = request.artifact.id or ""
        true = self.truth(artifact_id, question.id)
        if self.deterministic and request.variant == 0:
            # temperature 0: an identical prompt gets an identical answer
            digest = hashlib.sha256(
                f"{self.seed}|{request.artifact.text}|{question.id}".encode()
            ).digest()
            draw = random.Random(digest)
        else:
            draw = self.rng
        label = true
        if draw.random() < self.flip:
            label = draw.choice([c.label for c in question.choices if c.label != true])
        return Answer({label: 1.0})


def suite(size: int, wording: int) -> list[Artifact]:
    return [Artifact(f"Reply {i}, wording {wording}.", id=f"a{i:03d}") for i in range(size)]


@dataclass
class Trial:
    failed: bool
    named: frozenset[str]
    drift: bool
    accept_calls: int
    check_calls: int
    check_first_pass: int


def run_trial(
    size: int,
    flip: float,
    seed: int,
    before: Truth,
    after: Truth,
    *,
    deterministic: bool = False,
    reword: bool = False,
) -> Trial:
    rule = DecisionRule()
    accept_judge = NoisyJudge(before, flip, seed, deterministic)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, accept_judge, 0.85)
    accepted = asyncio.run(score_run(plan, suite(size, 0), rule))
    baseline = baseline_from_data(
        baseline_to_data(baseline_from_run(plan, accepted)), source="bench"
    )
    check_judge = NoisyJudge(after, flip, seed + 1_000_003, deterministic)
    if deterministic and not reword:
        check_judge = NoisyJudge(after, flip, seed, deterministic)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, check_judge, 0.85)
    outcome = asyncio.run(check_run(plan, suite(size, 1 if reword else 0), baseline, rule=rule))
    c = outcome.comparison
    named = frozenset([n.key for n in c.failures] + [f.key for f in c.flips if f.regression])
    return Trial(
        failed=c.failed,
        named=named,
        drift=c.drift.regressed,
        accept_calls=accept_judge.calls,
        check_calls=check_judge.calls,
        check_first_pass=size * len(QUESTIONS),
    )


def rate(hits: int, trials: int) -> str:
    low, high = wilson_ci(hits, trials)
    return f"{hits / trials:6.1%} [{low:5.1%}, {high:5.1%}]"


def changed(keys: set[str], label: Mapping[str, str]) -> Truth:
    def truth(artifact: str, question: str) -> str:
        if artifact in keys and question in label:
            return label[question]
        return clean(artifact, question)

    return truth


def drifted(artifact: str, question: str) -> str:
    """A 0.1 drop on average: two cells go to 'partly', a third in one artifact of five."""
    index = int(artifact[1:])
    partly = {"mission", "scope"} | ({"honesty"} if index % 5 == 0 else set())
    return "partly" if question in partly else clean(artifact, question)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--flip", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    n, f = args.trials, args.flip
    print(f"flip rate f = {f}, {n} trials per row, default settings, 95% Wilson intervals")
    print(f"{'scenario':58} {'fails / caught':>27}  {'confirm calls / accept calls':>28}")

    def report(label: str, trials: list[Trial], hit: Callable[[Trial], bool]) -> None:
        hits = sum(hit(t) for t in trials)
        reasks = sum(t.check_calls - t.check_first_pass for t in trials)
        accept = sum(t.accept_calls for t in trials)
        print(f"{label:58} {rate(hits, len(trials)):>27}  {reasks / accept:>27.3f}x")

    started = time.monotonic()
    for size in (10, 30, 100):
        trials = [run_trial(size, f, args.seed + i, clean, clean) for i in range(n)]
        report(f"A/A unchanged, {size} artifacts (false alarms)", trials, lambda t: t.failed)
    for size in (10, 30, 100):
        trials = [
            run_trial(size, f, args.seed + i, clean, clean, deterministic=True, reword=True)
            for i in range(n)
        ]
        report(
            f"A/A reworded, temperature-0 judge, {size} artifacts (false alarms)",
            trials,
            lambda t: t.failed,
        )
    violated = {f"a{i:03d}" for i in range(5)}
    for label, change in (
        ("P3 violated in 5 of 30, gate silent", {"P3": "no"}),
        ("P3 violated in 5 of 30, gate trips too", {"P3": "no", "G": "yes"}),
    ):
        trials = [
            run_trial(30, f, args.seed + i, clean, changed(violated, change)) for i in range(n)
        ]
        report(
            f"{label}: caught, naming only those",
            trials,
            lambda t: t.failed and bool(t.named) and t.named <= violated,
        )
        report(f"{label}: all 5 named", trials, lambda t: t.named == violated)
    one = {"a007"}
    trials = [run_trial(30, f, args.seed + i, clean, changed(one, {"G": "yes"})) for i in range(n)]
    report("1 of 30 newly contradicts (gate only): caught, named", trials, lambda t: t.named == one)
    trials = [run_trial(30, f, args.seed + i, clean, drifted) for i in range(n)]
    report(
        "0.1 mean drop over all 30, all above threshold: caught",
        trials,
        lambda t: t.drift and not t.named,
    )
    print(f"elapsed {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()

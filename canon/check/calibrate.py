"""Calibration: measure how often the judge changes its answer when asked the same again.

A seeded sample of (artifact, question) cells is asked ``repeats`` times, each time as a new
re-ask variant (choices reordered, sampled afresh), exactly as ``canon check`` confirms. A
cell's flip rate is the share of its answers that differ from its majority answer; rates
are pooled per question and per question kind, with Wilson intervals, and the upper bound
of the worst kind becomes the recommended ``flip_rate`` for the check.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan
from canon.core.artifact import Artifact
from canon.core.evidence import DEFAULT_FLIP_RATE
from canon.core.stats import wilson_ci
from canon.errors import JudgeError, JudgeScriptError, UsageError
from canon.judge.base import JudgeRequest

MAX_SENSIBLE_FLIP_RATE = 0.3  # beyond this, re-asking costs more than a better judge


@dataclass(frozen=True, slots=True)
class FlipTally:
    """Answers that differed from their cell's majority, out of all answers."""

    flips: int
    answers: int

    @property
    def rate(self) -> float | None:
        """The observed flip rate."""
        return self.flips / self.answers if self.answers else None

    @property
    def interval(self) -> tuple[float, float]:
        """The 95 % Wilson interval of the flip rate."""
        return wilson_ci(self.flips, self.answers)


@dataclass(frozen=True, slots=True)
class Calibration:
    """What the judge's repeated answers showed."""

    cells: int
    repeats: int
    failed: int  # answers the judge could not give
    by_kind: dict[str, FlipTally]
    by_question: dict[str, FlipTally]

    @property
    def recommended_flip_rate(self) -> float:
        """The flip_rate setting to use: the worst kind's upper bound, rounded up."""
        uppers = [t.interval[1] for t in self.by_kind.values() if t.answers]
        if not uppers:
            return DEFAULT_FLIP_RATE
        return min(0.45, max(0.05, math.ceil(max(uppers) * 20) / 20))

    @property
    def advice(self) -> str:
        """What to do with the measurement, in one sentence."""
        rate = self.recommended_flip_rate
        smallest = min((t.answers for t in self.by_kind.values()), default=0)
        if smallest < 60:
            return (
                f"too few answers for a tight bound (the smallest kind has {smallest}); "
                "raise --cells or --repeats before changing flip_rate"
            )
        if rate > MAX_SENSIBLE_FLIP_RATE:
            return (
                f"this judge changes its answers often (flip_rate {rate:.2f}): confirmations "
                "will need many re-asks; prefer a stronger judge, judge_options samples: 3, "
                "or logprobs"
            )
        if rate <= DEFAULT_FLIP_RATE:
            return (
                f"the default flip_rate {DEFAULT_FLIP_RATE} covers this judge; set "
                f"flip_rate: {rate:.2f} in canon.yaml for cheaper confirmations"
            )
        return f"set flip_rate: {rate:.2f} in canon.yaml so the check's error control holds"


async def calibrate(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    *,
    cells: int = 40,
    repeats: int = 5,
    seed: int = 0,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> Calibration:
    """Ask a sample of cells ``repeats`` times and tally how often the answers differ."""
    if repeats < 2:
        raise UsageError(f"calibration needs at least 2 repeats per cell, got {repeats}")
    if cells < 1:
        raise UsageError(f"calibration needs at least 1 cell, got {cells}")
    if not artifacts:
        raise UsageError("calibration needs at least one artifact in the suite")
    pairs = [(a, q) for a in artifacts for q in plan.questions]
    chosen = random.Random(seed).sample(pairs, min(cells, len(pairs)))
    limiter = asyncio.Semaphore(max(1, concurrency))

    async def ask(artifact: Artifact, variant: int, question_index: int) -> str | None:
        question = plan.questions[question_index]
        request = JudgeRequest(
            question, artifact, plan.constitution, plan.rubric.instructions, variant
        )
        async with limiter:
            try:
                answer = await plan.judge.answer(request)
            except JudgeScriptError:
                raise
            except JudgeError:
                return None
        return max(sorted(answer.distribution), key=lambda label: answer.distribution[label])

    index = {q.id: i for i, q in enumerate(plan.questions)}
    answers = await asyncio.gather(
        *(
            asyncio.gather(*(ask(a, v, index[q.id]) for v in range(1, repeats + 1)))
            for a, q in chosen
        )
    )
    by_kind: dict[str, list[int]] = {}
    by_question: dict[str, list[int]] = {}
    failed = 0
    for (_artifact, question), labels in zip(chosen, answers, strict=True):
        given = [label for label in labels if label is not None]
        failed += len(labels) - len(given)
        if len(given) < 2:
            continue
        majority = max(sorted(set(given)), key=given.count)
        flips = sum(label != majority for label in given)
        for table, key in ((by_kind, question.kind), (by_question, question.id)):
            tally = table.setdefault(key, [0, 0])
            tally[0] += flips
            tally[1] += len(given)
    return Calibration(
        cells=len(chosen),
        repeats=repeats,
        failed=failed,
        by_kind={k: FlipTally(*v) for k, v in sorted(by_kind.items())},
        by_question={k: FlipTally(*v) for k, v in by_question.items()},
    )

"""Agreement between two raters on one question: Cohen's kappa, raw agreement, violations.

The raters are a person and the judge (``canon align``) or two judges (``canon rejudge``).
Kappa's 95 % interval is the wider of two: a seeded percentile bootstrap over the labelled
artifacts, and a Wilson interval on the observed agreement carried onto the kappa scale with
the raters' answer frequencies held fixed. With the ten or twenty labels a team writes by
hand, a sample often agrees perfectly and the bootstrap (like the textbook large-sample
interval) collapses to [1, 1]; the Wilson part keeps the interval honest there, and the
bootstrap adds the uncertainty of the answer frequencies. ``benchmarks/bench_alignment.py``
measures the coverage.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from canon.core.comparison import Rate
from canon.core.rubric import Question
from canon.core.stats import wilson_ci
from canon.errors import UsageError

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
KAPPA_METHOD = (
    f"the wider of a percentile bootstrap over artifacts ({BOOTSTRAP_RESAMPLES} resamples, "
    f"seed {BOOTSTRAP_SEED}) and a Wilson interval on the agreement carried onto kappa"
)


@dataclass(frozen=True, slots=True)
class LabelPair:
    """Two raters' labels for one artifact on one question, with the judge's reasons."""

    key: str  # the artifact's key
    reference: str  # the person's label (or the old judge's)
    judged: str  # the judge's label
    reason: str | None = None  # the judge's reason
    reference_reason: str | None = None  # the old judge's reason, when one was recorded


@dataclass(frozen=True, slots=True)
class QuestionAgreement:
    """How well the judge agrees with the reference on one question."""

    question: str  # the question id: G, a facet id, P2
    principle: str | None  # the principle's own id, when it has one
    n: int
    agreement: float | None  # the share of artifacts labelled alike
    kappa: float | None  # None when both raters used one label only (kappa is 0/0)
    kappa_interval: tuple[float, float] | None
    violation_recall: Rate  # of the reference's violations, how many the judge found
    violation_precision: Rate  # of the judge's violations, how many the reference agrees with
    violations: tuple[str, ...]  # the labels that count as a violation (fail an artifact)
    confusion: Mapping[str, Mapping[str, int]]  # reference label -> judged label -> count
    disagreements: tuple[LabelPair, ...]

    @property
    def label(self) -> str:
        """The question as reports show it: ``P2`` or ``P2 [escalate-refunds]``."""
        return f"{self.question} [{self.principle}]" if self.principle else self.question


def violation_labels(question: Question) -> tuple[str, ...]:
    """The answers that fail an artifact: the lowest-scored choices (the gate's "yes")."""
    scores = [c.score for c in question.choices if c.score is not None]
    if not scores:
        raise UsageError(f"question {question.id} has no scored choice")
    lowest = min(scores)
    return tuple(c.label for c in question.choices if c.score == lowest)


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's (unweighted) kappa of label pairs; None when it is undefined (0/0)."""
    n = len(pairs)
    if n == 0:
        return None
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    same = 0
    for a, b in pairs:
        first[a] = first.get(a, 0) + 1
        second[b] = second.get(b, 0) + 1
        same += a == b
    observed = same / n
    chance = sum(count * second.get(label, 0) for label, count in first.items()) / (n * n)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def kappa_interval(
    pairs: Sequence[tuple[str, str]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Kappa's 95 % interval: the wider of the bootstrap and the Wilson-based one."""
    parts = [
        found
        for found in (
            bootstrap_interval(pairs, resamples=resamples, seed=seed),
            agreement_interval(pairs),
        )
        if found is not None
    ]
    if not parts:
        return None
    return (min(p[0] for p in parts), max(p[1] for p in parts))


def agreement_interval(pairs: Sequence[tuple[str, str]]) -> tuple[float, float] | None:
    """A Wilson interval on the share of agreeing pairs, carried onto kappa with the
    raters' answer frequencies held fixed (and kept within [-1, 1]); None when undefined."""
    n = len(pairs)
    if n == 0:
        return None
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    for a, b in pairs:
        first[a] = first.get(a, 0) + 1
        second[b] = second.get(b, 0) + 1
    chance = sum(count * second.get(label, 0) for label, count in first.items()) / (n * n)
    if chance >= 1.0:
        return None
    low, high = wilson_ci(sum(a == b for a, b in pairs), n)

    def carried(observed: float) -> float:
        return max(-1.0, min(1.0, (observed - chance) / (1.0 - chance)))

    return (carried(low), carried(high))


def bootstrap_interval(
    pairs: Sequence[tuple[str, str]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """A 95 % percentile-bootstrap interval for kappa (resamples where kappa is 0/0 are left
    out); None when fewer than half of them define it."""
    n = len(pairs)
    if n < 2:
        return None
    # Labels as small integers: the resampling loop then counts into lists, not dicts.
    names = sorted({label for pair in pairs for label in pair})
    index = {label: i for i, label in enumerate(names)}
    coded = [(index[a], index[b]) for a, b in pairs]
    width = len(names)
    rng = random.Random(seed)
    found: list[float] = []
    positions = range(n)
    for _ in range(resamples):
        first = [0] * width
        second = [0] * width
        same = 0
        for i in rng.choices(positions, k=n):
            a, b = coded[i]
            first[a] += 1
            second[b] += 1
            same += a == b
        chance = sum(x * y for x, y in zip(first, second, strict=True)) / (n * n)
        if chance < 1.0:
            found.append((same / n - chance) / (1.0 - chance))
    if len(found) < resamples // 2:
        return None  # the sample is nearly all one label: no honest interval
    found.sort()
    low = found[int(0.025 * (len(found) - 1))]
    high = found[round(0.975 * (len(found) - 1))]
    return (low, high)


def agreement(
    question: Question,
    pairs: Sequence[LabelPair],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> QuestionAgreement:
    """Everything ``canon align`` reports for one question, from its label pairs."""
    plain = [(p.reference, p.judged) for p in pairs]
    n = len(plain)
    violations = violation_labels(question)
    said = frozenset(violations)
    reference_violations = [p for p in plain if p[0] in said]
    judged_violations = [p for p in plain if p[1] in said]
    both = sum(1 for p in plain if p[0] in said and p[1] in said)
    confusion: dict[str, dict[str, int]] = {}
    for reference, judged in plain:
        row = confusion.setdefault(reference, {})
        row[judged] = row.get(judged, 0) + 1
    return QuestionAgreement(
        question=question.id,
        principle=question.principle,
        n=n,
        agreement=sum(a == b for a, b in plain) / n if n else None,
        kappa=cohen_kappa(plain),
        kappa_interval=kappa_interval(plain, resamples=resamples, seed=seed),
        violation_recall=Rate(both, len(reference_violations)),
        violation_precision=Rate(both, len(judged_violations)),
        violations=violations,
        confusion={k: dict(sorted(v.items())) for k, v in sorted(confusion.items())},
        disagreements=tuple(p for p in pairs if p.reference != p.judged),
    )


def modal_label(distribution: Sequence[tuple[str, float]] | Mapping[str, float]) -> str | None:
    """The label holding the most mass (ties: the first in sorted order); None when empty."""
    items = dict(distribution)
    if not items:
        return None
    return max(sorted(items), key=lambda label: items[label])

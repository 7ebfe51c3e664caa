"""Sequential evidence that a low answer is the judge's real answer and not noise.

Every failing decision of a run (a tripped NSCP gate, a question that flipped, an artifact
below the threshold) rests on a few cells whose answer was low. Each such cell carries a
*claim*: "the judge answers one of these labels" (the labels scoring no better than the
first answer). The claim is tested with a likelihood-ratio e-value built from independent
re-asks. Under the null hypothesis the judge strays to the claimed labels with probability at
most ``flip_rate``; under the alternative it gives them with probability at least
``1 - flip_rate``. Each answer multiplies the e-value by

    m * (1 - f) / f + (1 - m) * f / (1 - f)

where ``m`` is the answer's mass on the claimed labels (1 or 0 for a single sample). Under
the null this factor has expectation at most 1, so the running product is a nonnegative
supermartingale and, by Ville's inequality, reaches ``1 / a`` with probability at most ``a``
however the re-asking stops. A run splits its false-alarm budget over every cell it could
have tested (Bonferroni on e-values), so the whole run's error is controlled whatever the
suite's size; re-asking stops as soon as a cell is confirmed or refuted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from canon.core.rubric import Question
from canon.errors import UsageError

EvidenceStatus = Literal["confirmed", "refuted", "open", "unavailable"]

DEFAULT_ALPHA = 0.05  # the chance an unchanged suite fails a check, at most
DEFAULT_FLIP_RATE = 0.15  # how often the judge may stray from its usual answer
DEFAULT_MAX_REASKS = 16  # re-asks per cell before it is called undecided
DRIFT_SHARE = 0.2  # the part of alpha spent on the mean-drift test (Layer 2)


@dataclass(frozen=True, slots=True)
class DecisionRule:
    """How sure the check must be before a decision fails the run."""

    alpha: float = DEFAULT_ALPHA
    flip_rate: float = DEFAULT_FLIP_RATE
    max_reasks: int = DEFAULT_MAX_REASKS

    def __post_init__(self) -> None:
        for name, value, low, high in (
            ("alpha", self.alpha, 0.0, 0.5),
            ("flip_rate", self.flip_rate, 0.0, 0.5),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UsageError(f"{name} must be a number in (0, {high}), got {value!r}")
            if not low < value < high:
                raise UsageError(f"{name} must be in (0, {high}), got {value}")
        if isinstance(self.max_reasks, bool) or not isinstance(self.max_reasks, int):
            raise UsageError(f"max_reasks must be a whole number, got {self.max_reasks!r}")
        if not 1 <= self.max_reasks <= 64:
            raise UsageError(f"max_reasks must be between 1 and 64, got {self.max_reasks}")

    @property
    def cell_alpha(self) -> float:
        """The budget for all cell decisions together (the rest goes to Layer 2)."""
        return self.alpha * (1.0 - DRIFT_SHARE)

    @property
    def drift_alpha(self) -> float:
        """The significance level of the mean-drift test."""
        return self.alpha * DRIFT_SHARE

    @property
    def support(self) -> float:
        """How much one agreeing answer multiplies the evidence: (1 - f) / f."""
        return (1.0 - self.flip_rate) / self.flip_rate

    def bar(self, cells: int) -> float:
        """The e-value a cell needs when ``cells`` cells share the run's budget."""
        return max(1, cells) / self.cell_alpha

    def reasks_to_confirm(self, cells: int) -> int:
        """Re-asks that must all agree with a first answer to confirm it (the best case)."""
        return max(0, math.ceil(math.log(self.bar(cells)) / math.log(self.support) - 1e-9) - 1)


@dataclass(frozen=True, slots=True)
class Evidence:
    """The running test of one cell's claim."""

    labels: frozenset[str]  # the claim: the judge answers one of these
    ceiling: float | None  # the best score among the claimed labels (None: a claim of n/a)
    asks: int  # answers seen, the first one included
    e_value: float
    status: EvidenceStatus
    agreed: int = 0  # re-asks that gave the claimed labels most of their mass
    disagreed: int = 0  # re-asks that did not
    # Refuted at or below this e-value; None: 1 / support, two answers net against a claim
    # its first answer made. A claim made from several looks (one of them possibly against
    # it) gets one more: where it stops never changes the error rate, only the power.
    floor: float | None = None

    @property
    def reasks(self) -> int:
        """Answers asked for after the first."""
        return self.asks - 1


def claim_for(question: Question, distribution: Iterable[tuple[str, float]]) -> frozenset[str]:
    """The labels a low first answer claims: those scoring no better than it did.

    A first answer that is mostly n/a claims n/a; otherwise the claim holds every scored
    label whose score is at most the answer's expected score.
    """
    masses = dict(distribution)
    scores = {c.label: c.score for c in question.choices}
    na_mass = sum(m for label, m in masses.items() if scores.get(label) is None)
    scored = {label: m for label, m in masses.items() if scores.get(label) is not None}
    if na_mass > 0.5 or not scored:
        return frozenset(label for label, score in scores.items() if score is None)
    total = sum(scored.values())
    expected = sum(m * (scores[label] or 0.0) for label, m in scored.items()) / total
    return frozenset(
        label for label, score in scores.items() if score is not None and score <= expected + 1e-9
    )


def mass_on(labels: frozenset[str], distribution: Mapping[str, float]) -> float:
    """How much of an answer's mass lies on ``labels``."""
    total = sum(distribution.values())
    if total <= 0:
        return 0.0
    return sum(m for label, m in distribution.items() if label in labels) / total


def factor(mass: float, rule: DecisionRule) -> float:
    """The e-value factor of one answer that puts ``mass`` on the claimed labels."""
    f = rule.flip_rate
    return mass * (1.0 - f) / f + (1.0 - mass) * f / (1.0 - f)


def open_evidence(
    question: Question, distribution: Mapping[str, float], rule: DecisionRule, cells: int
) -> Evidence:
    """Start testing a cell's claim from its first answer."""
    labels = claim_for(question, distribution.items())
    scores = [c.score for c in question.choices if c.label in labels and c.score is not None]
    ceiling = max(scores) if scores else None
    first = Evidence(labels, ceiling, 0, 1.0, "open")
    return add_answer(first, distribution, rule, cells, counted=False)


def open_evidence_from(
    question: Question,
    answers: Sequence[Mapping[str, float]],
    rule: DecisionRule,
    cells: int,
    labels: frozenset[str] | None = None,
) -> Evidence:
    """Start testing a claim from every answer already asked (a first pass of several looks).

    The claim is ``labels`` when given, else the one the pooled answers make. Folding a fixed
    number of answers in before re-asking keeps the product a supermartingale under the null.
    """
    pooled: dict[str, float] = {}
    for answer in answers:
        total = sum(answer.values()) or 1.0
        for label, mass in answer.items():
            pooled[label] = pooled.get(label, 0.0) + mass / total / len(answers)
    labels = labels if labels is not None else claim_for(question, pooled.items())
    scores = [c.score for c in question.choices if c.label in labels and c.score is not None]
    floor = rule.support**-2 if len(answers) > 1 else None
    evidence = Evidence(labels, max(scores) if scores else None, 0, 1.0, "open", floor=floor)
    for index, answer in enumerate(answers):
        evidence = add_answer(evidence, answer, rule, cells, counted=index > 0)
    return evidence


def add_answer(
    evidence: Evidence,
    distribution: Mapping[str, float],
    rule: DecisionRule,
    cells: int,
    *,
    counted: bool = True,
) -> Evidence:
    """Fold one more answer into the test and settle it when the evidence decides."""
    mass = mass_on(evidence.labels, distribution)
    e_value = evidence.e_value * factor(mass, rule)
    agreed = evidence.agreed + (counted and mass > 0.5)
    disagreed = evidence.disagreed + (counted and mass <= 0.5)
    asks = evidence.asks + 1
    status: EvidenceStatus = "open"
    if e_value >= rule.bar(cells):
        status = "confirmed"
    # Two answers more against the claim than for it: the first answer was the judge's
    # noise. Stopping here never raises the false-alarm rate, only costs a little power.
    elif e_value <= (evidence.floor or 1.0 / rule.support) * (1.0 + 1e-9):
        status = "refuted"
    return Evidence(
        evidence.labels,
        evidence.ceiling,
        asks,
        e_value,
        status,
        int(agreed),
        int(disagreed),
        evidence.floor,
    )


def failed_reask(evidence: Evidence) -> Evidence:
    """The judge could not answer a re-ask: the claim can be neither confirmed nor refuted."""
    return Evidence(
        evidence.labels,
        evidence.ceiling,
        evidence.asks,
        evidence.e_value,
        "unavailable",
        evidence.agreed,
        evidence.disagreed,
        evidence.floor,
    )


def exhausted(evidence: Evidence, rule: DecisionRule) -> bool:
    """Whether the cell has had every re-ask the rule allows."""
    return evidence.reasks >= rule.max_reasks

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

Looks that cannot differ independently are one look. A deterministic judge (a decision
model, an LLM re-asked at temperature 0) answers an identical request identically, and its
misreadings of one response stick across that response's wordings: every answer it gives
about one response is one *unit*, worth one factor, at the share of its answers that read
the claim. So are the answers of any judge about one response of a replicated artifact
(a misreading sticks to the text). Units multiply: other responses, another judge's
sampled re-asks. The factor stays an e-value for any unit whose share of claim-reading
answers has expectation at most its flip rate under the null, averaging included.

Refuting a claim needs evidence for noise, not only against the claim: a sampled re-ask
multiplies a second ratio, a judge split half and half against one straying at the flip
rate, and a claim is refuted only when that ratio fell to ``1 / REFUTE_BAR``. A cell whose
re-asks ran out undecided, with a half-and-half judge ``SPLIT_BAR`` times likelier than one
answering it consistently (either way) but for the flip rate, is *split*: the judge cannot
tell there, and a check that asked it is inconclusive, not a pass.
"""

from __future__ import annotations

import dataclasses
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
# A claim is refuted when a half-and-half judge is this many times less likely than one
# straying at the flip rate to have given the re-asks (six disagreeing in a row) ...
REFUTE_BAR = 20.0
# ... and a cell whose re-asks ran out undecided is split when that judge is this many times
# likelier than a consistent one: at 16 re-asks, 7 or more each way. A judge at the flip
# rate ends so on about 0.5 % of the cells it is re-asked about, a coin flip on half.
SPLIT_BAR = 30.0
SPLIT = 0.5  # the half-and-half judge


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
    # How much likelier a half-and-half judge made the sampled re-asks than one straying at
    # the flip rate (1.0 before any): low refutes, high at the end is a split cell.
    split: float = 1.0
    units: int = 0  # independent units behind a claim built from units (0: sequential asks)
    # When the re-asks ran out: how much likelier a half-and-half judge made them than a
    # consistent one (``split_within``; per response with replicates, the largest).
    spread: float = 0.0
    # A replicated artifact's claim still open when its re-asks ran out: the judge never
    # read each response one way (the responses may differ; within one they did not agree).
    undecided: bool = False
    # The mirror of ``e_value``: how much the counted answers tell against a judge that
    # reads the claim at least ``1 - flip_rate`` of the time (``factor_at`` of the mass off
    # the claim). Labels never raise both: with probabilities they both grow when the judge
    # itself puts more than the flip rate on each side (unsure, not confirming). One
    # response's answers only: the responses of a replicated artifact may differ.
    against: float = 1.0

    @property
    def is_split(self) -> bool:
        """The re-asks ran out with the judge unable to tell on the cell: split about as
        often one way as the other, or, with replicates, never reading each response one way,
        or its own probabilities telling against either consistent reading (``unsure``)."""
        return self.status == "open" and (self.spread >= SPLIT_BAR or self.undecided or self.unsure)

    @property
    def unsure(self) -> bool:
        """The answers tell, each ``SPLIT_BAR`` times over, against a judge that reads the
        cell one way but for the flip rate, either way: a judge whose probabilities
        (logprobs) sit between the two. Hard labels cannot: they raise one and lower the other
        by the same factor."""
        return min(self.e_value, self.against) >= SPLIT_BAR

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
    return factor_at(mass, rule.flip_rate)


def factor_at(mass: float, flip_rate: float) -> float:
    """The factor of a look (or unit) reading the claim ``mass`` of the time, under the
    null that it does so at most ``flip_rate`` of the time: expectation at most 1 there."""
    f = flip_rate
    return mass * (1.0 - f) / f + (1.0 - mass) * f / (1.0 - f)


def split_factor(mass: float, rule: DecisionRule) -> float:
    """How much likelier a half-and-half judge makes one sampled answer than one straying
    to the claim at the flip rate."""
    f = rule.flip_rate
    return mass * SPLIT / f + (1.0 - mass) * SPLIT / (1.0 - f)


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
    guard: bool = True,
) -> Evidence:
    """Fold one more answer into the test and settle it when the evidence decides.

    ``guard``: the answer also feeds the split ratio, and refuting needs it low (one
    response's re-asks); off where the re-asks go round several responses, whose split is
    measured per response (``split_within``)."""
    mass = mass_on(evidence.labels, distribution)
    e_value = evidence.e_value * factor(mass, rule)
    agreed = evidence.agreed + (counted and mass > 0.5)
    disagreed = evidence.disagreed + (counted and mass <= 0.5)
    split = evidence.split * (split_factor(mass, rule) if counted and guard else 1.0)
    against = evidence.against * (factor(1.0 - mass, rule) if counted and guard else 1.0)
    asks = evidence.asks + 1
    status: EvidenceStatus = "open"
    # A judge whose own probabilities put well over the flip rate on both sides rejects the
    # null without bearing out the claim: it is unsure, and an unsure judge confirms nothing
    # (an unchanged suite judged by one was read as regressed in 52 % of checks).
    if e_value >= rule.bar(cells) and not (guard and against >= SPLIT_BAR):
        status = "confirmed"
    # Answers net against the claim, and re-asks that a judge split on the cell would not
    # have given: the first answer was the judge's noise. Stopping here never raises the
    # false-alarm rate, only costs a little power; a coin-flip judge is not cleared by it.
    elif e_value <= (evidence.floor or 1.0 / rule.support) * (1.0 + 1e-9) and (
        split <= 1.0 / REFUTE_BAR or not guard
    ):
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
        split,
        against=against,
    )


def split_within(agreed: int, disagreed: int, rule: DecisionRule) -> float:
    """How much likelier a half-and-half judge makes one response's re-asks than one that
    answers it consistently but for the flip rate, either way, each way as likely.

    The two ways are averaged, not the likelier one taken: the ratio is then one of two
    fixed hypotheses, so under a half-and-half judge its inverse is a martingale, over one
    response and multiplied over several (``canon.check.confirm.consistent``). A coin flip
    falls to ``1 / REFUTE_BAR`` (is cleared) with probability at most ``1 / REFUTE_BAR``
    however the re-asking stops. The likelier way alone let it through up to twice as
    often per response: 5.5 % of checks with a coin on three responses (issue 23)."""
    f = rule.flip_rate
    one_way = f**agreed * (1.0 - f) ** disagreed
    other_way = (1.0 - f) ** agreed * f**disagreed
    return float(SPLIT ** (agreed + disagreed) / ((one_way + other_way) / 2.0))


@dataclass(frozen=True, slots=True)
class Unit:
    """Answers that share what a misreading sticks to: every answer of a deterministic judge
    about one response, or every answer of any judge about one response of a replicated
    artifact. It counts once, at the share of its answers that read the claim."""

    masses: tuple[float, ...]  # each answer's mass on the claimed labels
    flip_rate: float  # under the null, the unit reads the claim at most this share

    @property
    def reading(self) -> float:
        """The share of the unit's answers that give the claim most of their mass."""
        return sum(1.0 for m in self.masses if m > 0.5) / len(self.masses)


def evidence_from_units(
    question: Question,
    labels: frozenset[str],
    units: Sequence[Unit],
    sampled: Sequence[float],
    rule: DecisionRule,
    cells: int,
) -> Evidence:
    """A claim tested on independent units (``units``) and sampled re-asks of a judge whose
    asks are independent looks (``sampled``: each answer's mass on the claim).

    The e-value is the product of each unit's factor at its reading and each sampled
    answer's factor; sampled answers also feed the split ratio (see the module docstring).
    """
    scores = [c.score for c in question.choices if c.label in labels and c.score is not None]
    e_value = 1.0
    agreed = disagreed = 0
    for unit in units:
        e_value *= factor_at(unit.reading, unit.flip_rate)
        agreed += unit.reading > 0.5
        disagreed += unit.reading <= 0.5
    split = 1.0
    for mass in sampled:
        e_value *= factor(mass, rule)
        split *= split_factor(mass, rule)
        agreed += mass > 0.5
        disagreed += mass <= 0.5
    status: EvidenceStatus = "open"
    if e_value >= rule.bar(cells):
        status = "confirmed"
    elif e_value <= 1.0 / rule.support * (1.0 + 1e-9) and (
        not sampled or split <= 1.0 / REFUTE_BAR
    ):
        status = "refuted"
    asks = sum(len(u.masses) for u in units) + len(sampled)
    return Evidence(
        labels,
        max(scores) if scores else None,
        asks,
        e_value,
        status,
        agreed,
        disagreed,
        split=split,
        units=len(units),
    )


@dataclass(frozen=True, slots=True)
class Power:
    """What a run could confirm, and what it measured of its judge's disagreement.

    ``unconfirmable``: judged artifacts on which no failure could have been confirmed, had
    every look the run may take read it (``best`` is the largest e-value such a claim could
    reach, ``bar`` the one it needed). ``split``: cells whose re-asks ran out with the judge
    split. ``strays`` of ``readings``: responses read as violated where every other
    response of the cell was not (the per-response misreading rate, replicates only).
    """

    unconfirmable: tuple[str, ...] = ()
    best: float | None = None
    bar: float | None = None
    split: tuple[tuple[str, str], ...] = ()
    strays: int = 0
    readings: int = 0
    deterministic: bool = False  # the judge answers an identical request identically
    confirm_judge: bool = False  # a second judge confirms


def attainable(units: Sequence[float], sampled: int, rule: DecisionRule) -> float:
    """The largest e-value a claim could reach: every unit (given by its flip rate) and
    ``sampled`` sampled answers all reading it."""
    best = rule.support**sampled
    for flip_rate in units:
        best *= (1.0 - flip_rate) / flip_rate
    return best


def failed_reask(evidence: Evidence) -> Evidence:
    """The judge could not answer a re-ask: the claim can be neither confirmed nor refuted."""
    return dataclasses.replace(evidence, status="unavailable", undecided=False)


def exhausted(evidence: Evidence, rule: DecisionRule) -> bool:
    """Whether the cell has had every re-ask the rule allows."""
    return evidence.reasks >= rule.max_reasks

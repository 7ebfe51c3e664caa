"""What a check found: flips, non-canon artifacts, rates, re-ask noise, drift, the comparison.

Values only; ``canon.core.compare`` computes them from a run and its baseline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from canon.core.outcome import Note, Reason, as_note, as_reason
from canon.core.significance import DropTest
from canon.core.stats import wilson_ci

FlipStatus = Literal[
    "pending", "confirmed", "unconfirmed", "inconclusive", "unavailable", "unchanged", "unsettled"
]
Status = Literal["conforms", "regressed", "inconclusive", "unavailable"]
CellKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Flip:
    """A question that went from solidly satisfied to violated on one artifact.

    ``confirmed`` when re-asking showed the violation beyond judge noise, ``unconfirmed``
    when the judge did not repeat it, ``inconclusive`` when it stayed split through every
    re-ask, ``unavailable`` when re-asking failed, ``pending`` when nobody re-asked (a
    plain ``gate()`` call). Pending and confirmed flips are regressions (fail closed),
    unless the text is identical to the baseline's (``unchanged``: the judge disagrees
    with itself) or the baseline answer was a single ask (``unsettled``: format 4 only).
    """

    key: str
    question: str
    text: str
    baseline_score: float
    baseline_confidence: float
    score: float
    confidence: float
    status: FlipStatus = "pending"
    asks: int = 1
    e_value: float | None = None
    principle: str | None = None  # the principle's id, when it has one
    # The re-asks that agreed with the violation: wording, choice order and judge of each.
    confirmed_by: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The question as reports show it: ``P2`` or ``P2 [escalate-refunds]``."""
        return f"{self.question} [{self.principle}]" if self.principle else self.question

    @property
    def regression(self) -> bool:
        """Whether this flip fails the check."""
        return self.status in ("pending", "confirmed")


@dataclass(frozen=True, slots=True)
class NonCanon:
    """A current artifact that is non-canon on evidence."""

    key: str
    reasons: tuple[Reason, ...]
    known: bool = False  # non-canon in the baseline too: a known failure
    # Canon in the baseline, non-canon now, on the very same text: the judge disagrees with
    # its own baseline verdict, which is not a regression of the artifact.
    unchanged: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "reasons", tuple(map(as_reason, self.reasons)))


@dataclass(frozen=True, slots=True)
class Rate:
    """A share of artifacts, with its 95 % Wilson interval."""

    successes: int
    trials: int

    @property
    def value(self) -> float | None:
        """The share itself (None with no trials)."""
        return self.successes / self.trials if self.trials else None

    @property
    def interval(self) -> tuple[float, float]:
        """The 95 % Wilson score interval."""
        return wilson_ci(self.successes, self.trials)

    @property
    def strict_interval(self) -> tuple[float, float]:
        """The 99 % Wilson score interval."""
        return wilson_ci(self.successes, self.trials, z=2.576)

    def __str__(self) -> str:
        if not self.trials:
            return "n/a"
        low, high = self.interval
        return f"{self.successes}/{self.trials} = {self.value:.0%} [{low:.0%}, {high:.0%}]"


@dataclass(frozen=True, slots=True)
class ReaskNoise:
    """How often the judge's re-asks disagreed with their cell's majority answer."""

    reasks: int
    disagreements: int
    assumed_flip_rate: float

    @property
    def rate(self) -> Rate:
        """The observed disagreement, as a rate with an interval."""
        return Rate(self.disagreements, self.reasks)

    @property
    def noisier_than_assumed(self) -> bool:
        """The judge disagreed with itself more than the decision rule assumes."""
        return self.reasks >= 5 and self.rate.interval[0] > self.assumed_flip_rate

    @property
    def far_noisier_than_assumed(self) -> bool:
        """Noisier beyond doubt (the 99 % interval): too noisy to call a regression.

        The 95 % bound alone turned 8 % of the checks of a judge exactly as noisy as
        assumed (15 %) inconclusive; the note above still uses it.
        """
        return self.reasks >= 5 and self.rate.strict_interval[0] > self.assumed_flip_rate


@dataclass(frozen=True, slots=True)
class Drift:
    """Layer 2: how the mean (uncapped) score moved, and whether that is beyond noise."""

    baseline_mean: float | None
    current_mean: float | None
    tolerance: float
    test: DropTest

    @property
    def drop(self) -> float | None:
        """How far the mean fell (negative when it rose)."""
        return self.test.drop

    @property
    def regressed(self) -> bool:
        """The drop clears the tolerance and the significance test."""
        return self.drop is not None and self.drop > self.tolerance and self.test.beyond_noise

    @property
    def smallest_flaggable(self) -> float | None:
        """The drop this check catches with 80 % power: tolerance or test, the larger."""
        found = self.test.minimum_detectable
        return None if found is None else max(self.tolerance, found)

    @property
    def underpowered(self) -> bool:
        """A real drop of the tolerance would be missed more than one time in five."""
        if not self.test.can_reject:
            return True  # too few artifacts for the test to show any drop at all
        found = self.test.minimum_detectable
        return found is not None and found > self.tolerance


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of checking a run against its baseline."""

    checked: int
    matched: int
    new: tuple[str, ...]
    missing: tuple[str, ...]
    non_canon: tuple[NonCanon, ...]  # non-canon on evidence; ``known`` ones may not fail
    flips: tuple[Flip, ...]
    drift: Drift
    notes: tuple[Note, ...]
    unscored: int  # questions the judge left unanswered in this run
    canon_rate: tuple[Rate, Rate] = (Rate(0, 0), Rate(0, 0))  # baseline, now
    question_rates: Mapping[str, tuple[Rate, Rate]] = dataclasses.field(default_factory=dict)
    noise: ReaskNoise | None = None
    strict: bool = False
    # Artifacts whose verdict waits on unscored questions: INCOMPLETE (not judged).
    undecided: tuple[str, ...] = ()
    # The first question the judge failed to answer and why (``key P1: HTTP 500 ...``).
    cause: str | None = None
    # Why the judge cannot separate a regression in this run (canon.core.judge_health);
    # a failing check with reasons here is inconclusive, never a confident regression.
    inconclusive: tuple[str, ...] = ()
    # Per question the check failed on, the judge's recorded agreement with human labels
    # (``canon align``), one line each; the CLI fills it in from the alignment record.
    alignment: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # a caller's plain-string notes become coded values (canon.core.outcome)
        object.__setattr__(self, "notes", tuple(map(as_note, self.notes)))

    @property
    def blind(self) -> bool:
        """The run could not have seen a regression (canon.core.outcome.NoteKind.blinds):
        inconclusive whether or not something would fail, never CONFORMS."""
        return any(as_note(n).kind.blinds for n in self.inconclusive)

    @property
    def regressions(self) -> tuple[Flip, ...]:
        """Flips that fail the check (confirmed, or not re-asked)."""
        return tuple(f for f in self.flips if f.regression)

    @property
    def failures(self) -> tuple[NonCanon, ...]:
        """Non-canon artifacts that fail the check: all of them with ``strict``."""
        return tuple(n for n in self.non_canon if self.strict or not (n.known or n.unchanged))

    @property
    def judge_disagreements(self) -> tuple[NonCanon, ...]:
        """Newly non-canon verdicts on a text identical to the baseline's: notes."""
        return tuple(n for n in self.non_canon if n.unchanged and not n.known)

    @property
    def known(self) -> tuple[NonCanon, ...]:
        """Non-canon artifacts that were non-canon in the baseline too."""
        return tuple(n for n in self.non_canon if n.known)

    @property
    def tolerated(self) -> frozenset[str]:
        """Keys of the known failures this check lets pass (none with ``strict``)."""
        return frozenset() if self.strict else frozenset(n.key for n in self.known)

    @property
    def failed(self) -> bool:
        """Whether there is real evidence of a regression or a new non-canon artifact."""
        return bool(self.failures or self.regressions or self.drift.regressed)

    @property
    def status(self) -> Status:
        """conforms, regressed, inconclusive (a judge too noisy to tell), or unavailable."""
        if self.blind or (self.failed and self.inconclusive):
            return "inconclusive"
        if self.failed:
            return "regressed"
        if self.unscored or self.undecided or any(f.status == "unavailable" for f in self.flips):
            return "unavailable"
        return "conforms"

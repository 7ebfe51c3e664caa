"""Judging production traffic: which traces are judged, when a trace is complete, what
happened to each one, and what the judged sample says.

Pure values only; the monitors (``canon.monitor``) do the reading, the judging and the
writing. Every trace gets one ``Decision``: sampled out, judged (with its verdict),
budget-dropped, unscored (the judge failed, with the cause), gate-failed (a deterministic
gate stopped it before the judge) or late (a span that came after the trace's decision).
A decision is keyed by ``once_key`` (the trace id and the digests of the contract and the
constitution it was decided under), so a trace delivered twice is decided once.
"""

from __future__ import annotations

import enum
import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from canon.core.stats import wilson_ci
from canon.errors import InputError, UsageError

DEFAULT_SETTLE = 30.0  # seconds without a new span (after the root ended) before judging
DEFAULT_SETTLE_MAX = 600.0  # seconds after the first span when a trace counts as complete
DEFAULT_SALT = "canon"
_SCALE = float(1 << 64)


def sample_point(trace_id: str, salt: str = DEFAULT_SALT) -> float:
    """Where a trace id falls in [0, 1): the first 8 bytes of ``sha256(salt, 0, id)``.

    The id is compared in lowercase hex, so every worker and every restart (and an id
    written in capitals by one exporter) lands on the same point."""
    material = f"{salt}\x00{trace_id.strip().lower()}".encode()
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big") / _SCALE


def sampled(trace_id: str, rate: float, salt: str = DEFAULT_SALT) -> bool:
    """Whether the trace is in the sample: ``sha256(salt, trace id) < rate``."""
    check_rate(rate)
    return sample_point(trace_id, salt) < rate


def check_rate(rate: float) -> float:
    """A sampling rate in [0, 1], or a ``UsageError`` naming it."""
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
        raise UsageError(f"--sample {rate!r}: a share of traces from 0 to 1, e.g. 0.05")
    return float(rate)


def settled(
    now: float,
    *,
    first_seen: float,
    last_seen: float,
    root_ended: bool,
    settle: float = DEFAULT_SETTLE,
    settle_max: float = DEFAULT_SETTLE_MAX,
) -> bool:
    """Whether a trace is complete: its root span ended and no span came for ``settle``
    seconds, or ``settle_max`` seconds passed since its first span (a root that never
    comes: its parent lives in another service, or it was lost)."""
    if now - first_seen >= settle_max:
        return True
    return root_ended and now - last_seen >= settle


def once_key(trace_id: str, contract_digest: str, constitution_digest: str) -> str:
    """The key a trace's decision is stored under: one decision per trace per contract and
    constitution (a new contract or constitution decides the trace anew)."""
    return f"{trace_id.strip().lower()}:{contract_digest[:16]}:{constitution_digest[:16]}"


def stream_of(trace_id: str, streams: int) -> int:
    """Which of ``streams`` streams a trace's spans go to: by a hash of its id, so all of
    one trace's spans reach one stream, in the order they were sent."""
    if streams < 1:
        raise UsageError(f"--streams {streams}: give 1 or more")
    digest = hashlib.sha256(trace_id.strip().lower().encode()).digest()
    return int.from_bytes(digest[:8], "big") % streams


def budget_day(now: float) -> str:
    """The UTC day a spend belongs to (``--budget`` is dollars per UTC day)."""
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True, slots=True)
class MonitorSettings:
    """The ``monitor:`` section of canon.yaml: the monitors' judging defaults, each one
    overridden by its command-line flag (None: not set, the flag's own default applies)."""

    judge: bool = False  # judge a sample of the traces without --judge
    sample: float | None = None
    salt: str | None = None
    budget: float | None = None  # dollars per UTC day
    settle: float | None = None  # seconds (canon monitor worker)
    settle_max: float | None = None


MONITOR_SETTINGS = ("judge", "sample", "salt", "budget", "settle", "settle_max")


class DecisionKind(enum.Enum):
    """What happened to one trace."""

    SAMPLED_OUT = "sampled-out"
    JUDGED = "judged"
    BUDGET_DROPPED = "budget-dropped"
    UNSCORED = "unscored"
    GATE_FAILED = "gate-failed"
    LATE = "late"


@dataclass(frozen=True, slots=True)
class Decision:
    """The decision on one trace: its kind and what goes with it.

    ``verdict`` (``canon`` or ``non_canon``), ``score`` and ``principles`` (principle id ->
    held) are set for a judged trace only; ``cause`` says why a trace went unscored, which
    gate stopped it, or (late) how many spans came after its decision. ``cost`` is what the
    judge spent on it in USD."""

    kind: DecisionKind
    trace_id: str
    at: float
    verdict: str | None = None
    score: float | None = None
    principles: Mapping[str, bool] = field(default_factory=dict)
    cause: str | None = None
    cost: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The decision as plain JSON data (the ``decision`` field of an audit record)."""
        data: dict[str, Any] = {"kind": self.kind.value, "trace_id": self.trace_id, "at": self.at}
        if self.verdict is not None:
            data["verdict"] = self.verdict
        if self.score is not None:
            data["score"] = self.score
        if self.principles:
            data["principles"] = dict(sorted(self.principles.items()))
        if self.cause is not None:
            data["cause"] = self.cause
        if self.cost:
            data["cost"] = self.cost
        return data

    @classmethod
    def from_dict(cls, data: object, where: str) -> Decision:
        """A decision read back; anything else is an ``InputError`` naming ``where``."""
        if not isinstance(data, Mapping):
            raise InputError(f"{where}: a decision is a JSON object")
        try:
            kind = DecisionKind(data.get("kind"))
        except ValueError:
            known = ", ".join(k.value for k in DecisionKind)
            raise InputError(
                f"{where}: decision kind {data.get('kind')!r} is not one of {known}"
            ) from None
        trace_id, at = data.get("trace_id"), data.get("at")
        if not isinstance(trace_id, str) or not trace_id:
            raise InputError(f"{where}: a decision needs its trace_id")
        if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
            raise InputError(f"{where}: a decision needs its time 'at' (seconds since 1970)")
        principles = data.get("principles", {})
        if not isinstance(principles, Mapping) or not all(
            isinstance(k, str) and isinstance(v, bool) for k, v in principles.items()
        ):
            raise InputError(f"{where}: 'principles' maps principle ids to true or false")
        verdict = data.get("verdict")
        if kind is DecisionKind.JUDGED and verdict not in ("canon", "non_canon"):
            raise InputError(f"{where}: a judged decision's verdict is canon or non_canon")
        score, cost, cause = data.get("score"), data.get("cost", 0.0), data.get("cause")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise InputError(f"{where}: 'score' is a number")
        if isinstance(cost, bool) or not isinstance(cost, int | float) or cost < 0:
            raise InputError(f"{where}: 'cost' is a number of dollars, 0 or more")
        if cause is not None and not isinstance(cause, str):
            raise InputError(f"{where}: 'cause' is text")
        return cls(
            kind,
            trace_id,
            float(at),
            verdict if isinstance(verdict, str) else None,
            None if score is None else float(score),
            dict(principles),
            cause,
            float(cost),
        )


@dataclass(frozen=True, slots=True)
class Rate:
    """A share with its Wilson interval: ``held`` of ``judged``."""

    held: int
    judged: int
    low: float
    high: float

    @property
    def rate(self) -> float | None:
        """The share, or None with nothing judged."""
        return self.held / self.judged if self.judged else None


def rate_of(held: int, judged: int, z: float = 1.96) -> Rate:
    """``held`` of ``judged`` with its Wilson interval (95 % by default)."""
    low, high = wilson_ci(held, judged, z)
    return Rate(held, judged, low, high)


@dataclass(frozen=True, slots=True)
class Summary:
    """What the decisions of a period say: counts by kind, the sampled canon rate, and the
    rate each principle held on the judged traces."""

    counts: Mapping[DecisionKind, int]
    canon: Rate
    principles: Mapping[str, Rate]
    cost: float

    @property
    def traces(self) -> int:
        """Traces decided (a late span is no trace of its own)."""
        return sum(n for kind, n in self.counts.items() if kind is not DecisionKind.LATE)


def summarize(decisions: Iterable[Decision]) -> Summary:
    """Counts, the canon rate and each principle's rate over ``decisions``."""
    counts = dict.fromkeys(DecisionKind, 0)
    canon = judged = 0
    held: dict[str, list[int]] = {}
    cost = 0.0
    for decision in decisions:
        counts[decision.kind] += 1
        cost += decision.cost
        if decision.kind is not DecisionKind.JUDGED:
            continue
        judged += 1
        canon += decision.verdict == "canon"
        for principle, ok in decision.principles.items():
            tally = held.setdefault(principle, [0, 0])
            tally[0] += ok
            tally[1] += 1
    principles = {p: rate_of(h, n) for p, (h, n) in sorted(held.items(), key=_principle_order)}
    return Summary(counts, rate_of(canon, judged), principles, cost)


def _principle_order(item: tuple[str, list[int]]) -> tuple[int, str]:
    name = item[0]
    digits = name[1:]
    return (int(digits), name) if name[:1] == "P" and digits.isdigit() else (1 << 30, name)


def trend(decisions: Iterable[Decision], bucket: float) -> list[tuple[float, Summary]]:
    """The summary of each ``bucket``-second period that has decisions, oldest first."""
    if not math.isfinite(bucket) or bucket <= 0:
        raise UsageError(f"a trend's period must be a positive number of seconds, got {bucket}")
    periods: dict[float, list[Decision]] = {}
    for decision in decisions:
        start = math.floor(decision.at / bucket) * bucket
        periods.setdefault(start, []).append(decision)
    return [(start, summarize(periods[start])) for start in sorted(periods)]


WAIT: Literal["wait"] = "wait"  # the first cost is being learnt: ask again once it is known


def reservation(
    limit: float, spent: float, reserved: float, largest: float, in_flight: int
) -> float | Literal["wait"] | None:
    """What the next judged trace reserves of a day's ``limit``, or None when it would not
    fit (budget-dropped). ``largest`` is the dearest trace judged so far: its cost is the
    estimate. Before any cost is known (``largest`` 0) a trace goes alone (``in_flight``,
    the traces being judged, is 0) and only while the spend is under the limit, so the day
    ends at most one trace's cost over it; after, the estimate must fit beside what is
    spent and reserved. ``WAIT`` while the first trace is still being judged."""
    if largest <= 0:
        if spent >= limit:
            return None
        return 0.0 if in_flight <= 0 else WAIT
    return largest if spent + reserved + largest <= limit else None

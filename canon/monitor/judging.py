"""Judging a monitored trace: sample it, hold it to the day's budget, ask the project's judge.

Every monitor (a directory, CloudWatch, the Redis consumer group) decides a trace here, after
its contract ran: a contract FAIL is ``gate-failed`` (no judge call), a trace outside the
deterministic sample is ``sampled-out``, one the budget cannot take is ``budget-dropped``
(never a pass or a failure), and the rest are judged through the project's scoring plan
(``canon.check.plan.build_plan``: whatever judge it builds, decision models included), the
trace's request and answer becoming the artifact's ``input`` and text. A judge that fails
leaves the trace ``unscored`` with the cause, never a pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from canon.check.runner import ScoringPlan, score_artifact
from canon.check.spend import run_usage
from canon.core.artifact import Artifact
from canon.core.online import (
    DEFAULT_SALT,
    WAIT,
    Decision,
    DecisionKind,
    budget_day,
    check_rate,
    once_key,
    reservation,
    sampled,
)
from canon.core.scoring import ArtifactResult, plainly_violated
from canon.core.verdict import Verdict, verdict_of
from canon.errors import CanonError
from canon.gates.contracts.dump import dump_contract
from canon.gates.contracts.execution import Execution
from canon.gates.contracts.model import Contract
from canon.gates.contracts.model import Verdict as ContractVerdict
from canon.judge.concurrency import AdaptiveLimiter
from canon.monitor.ledger import DECISION_FIELD, ONCE_FIELD, TRACE_ID_FIELD

T = TypeVar("T")


class Budget(Protocol):
    """A day's judge spend shared by whoever judges: reserve before a trace, settle after."""

    def reserve(self, now: float) -> float | Literal["wait"] | None:
        """The amount reserved for one trace, None when it would not fit today, or
        ``WAIT`` while the first trace's cost is being learnt."""

    def settle(self, reserved: float, spent: float, reserved_at: float, now: float) -> None:
        """Book what the trace really cost (on ``now``'s day) and release its reservation
        (made at ``reserved_at``, on that day's account)."""

    def resume(self, spent: Mapping[str, float], largest: float) -> None:
        """Start from what the monitor's records show was spent (UTC day -> dollars) and
        the dearest trace they show, so a restart cannot spend a day's budget twice."""


@dataclass
class LocalBudget:
    """``--budget`` for one process (the directory and CloudWatch monitors): dollars per UTC
    day, with ``reservation``'s rule (canon.core.online). The day's spend survives a
    restart through ``resume``: the monitor's records carry each judged trace's cost."""

    limit: float
    day: str = ""
    spent: float = 0.0
    reserved: float = 0.0
    largest: float = 0.0
    in_flight: int = 0
    carried: dict[str, float] = field(default_factory=dict)  # UTC day -> spend before a start
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def resume(self, spent: Mapping[str, float], largest: float) -> None:
        with self._lock:
            self.carried = dict(spent)
            self.largest = max(self.largest, largest)
            self.day = ""  # the next reservation starts its day from what was carried

    def _roll(self, now: float) -> None:
        today = budget_day(now)
        if today != self.day:
            self.day, self.reserved, self.in_flight = today, 0.0, 0
            self.spent = self.carried.get(today, 0.0)

    def reserve(self, now: float) -> float | Literal["wait"] | None:
        with self._lock:
            self._roll(now)
            amount = reservation(
                self.limit, self.spent, self.reserved, self.largest, self.in_flight
            )
            if isinstance(amount, float):
                self.reserved += amount
                self.in_flight += 1
            return amount

    def settle(self, reserved: float, spent: float, reserved_at: float, now: float) -> None:
        with self._lock:
            if budget_day(reserved_at) == self.day:  # else the day rolled: nothing is held
                self.reserved = max(0.0, self.reserved - reserved)
                self.in_flight = max(0, self.in_flight - 1)
            self._roll(now)
            self.spent += spent
            self.largest = max(self.largest, spent)


@dataclass(frozen=True, slots=True)
class Judged:
    """A trace's decision, and the scored result behind it when the judge was asked."""

    decision: Decision
    result: ArtifactResult | None = None


NO_CONTRACT = "0" * 64  # the contract digest of a monitor that runs no contract


def contract_digest(contract: Contract) -> str:
    """The SHA-256 of the contract as Canon writes it (a changed contract decides anew)."""
    return hashlib.sha256(dump_contract(contract).encode("utf-8")).hexdigest()


class _Loop:
    """One event loop on a thread of its own, shared by every trace a monitor judges, with
    one ``AdaptiveLimiter``: the judge's calls in flight stay within the plan's
    ``concurrency`` across all traces, and the limit learns from every reply instead of
    starting slow for each trace."""

    def __init__(self, concurrency: int) -> None:
        self._concurrency = concurrency
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.limiter: AdaptiveLimiter | None = None

    def run(self, work: Callable[[AdaptiveLimiter], Coroutine[Any, Any, T]]) -> T:
        """Run ``work(limiter)`` on the shared loop and wait for its result."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="canon-judge-loop", daemon=True
                ).start()
                self._loop = loop
                self.limiter = AdaptiveLimiter(self._concurrency)
            loop, limiter = self._loop, self.limiter
        assert limiter is not None
        return asyncio.run_coroutine_threadsafe(work(limiter), loop).result()


@dataclass(frozen=True)
class OnlineJudge:
    """How a monitor judges: the plan, the sample rate and salt, and the budget."""

    plan: ScoringPlan
    rate: float = 1.0
    salt: str = DEFAULT_SALT
    budget: Budget | None = None
    clock: Callable[[], float] = time.time

    _loop: _Loop = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_rate(self.rate)
        object.__setattr__(self, "_loop", _Loop(self.plan.concurrency))

    def resume(self, spent: Mapping[str, float], largest: float) -> None:
        """Resume the budget from what the monitor's records show spent (see ``Budget``)."""
        if self.budget is not None:
            self.budget.resume(spent, largest)

    def key(self, trace_id: str, contract: Contract | None) -> str:
        """The trace's once key under this contract and the plan's constitution."""
        digest = NO_CONTRACT if contract is None else contract_digest(contract)
        return once_key(trace_id, digest, self.plan.constitution.digest)

    def decide(
        self,
        execution: Execution,
        verdict: ContractVerdict | None,
        start: Callable[[], str | None] | None = None,
    ) -> Judged:
        """The decision on one trace whose contract gave ``verdict`` (None: no contract).
        ``start`` is called just before the judge would be: a cause it returns (the trace's
        judging began once before, in a worker that died) leaves the trace unscored with
        that cause instead of asking the judge a second time."""
        trace_id = execution.execution_id
        now = self.clock()
        if verdict is not None and verdict.status == "fail":
            cause = f"contract: {len(verdict.violations)} violation(s)"
            return Judged(Decision(DecisionKind.GATE_FAILED, trace_id, now, cause=cause))
        if not sampled(trace_id, self.rate, self.salt):
            return Judged(Decision(DecisionKind.SAMPLED_OUT, trace_id, now))
        text = (execution.output_text or "").strip()
        if not text:
            cause = "the trace records no answer (no output on its root span)"
            return Judged(Decision(DecisionKind.UNSCORED, trace_id, now, cause=cause))
        refused = None if start is None else start()
        if refused is not None:
            return Judged(Decision(DecisionKind.UNSCORED, trace_id, now, cause=refused))
        reserved = None
        if self.budget is not None:
            reserved = _held(self.budget, now, self.clock)
            if reserved is None:
                return Judged(Decision(DecisionKind.BUDGET_DROPPED, trace_id, now))
        artifact = Artifact(text, id=trace_id, input=(execution.input_text or None))
        spent = 0.0
        try:
            result = self._loop.run(lambda limiter: score_artifact(self.plan, artifact, limiter))
            spent = run_usage([result]).run.cost or 0.0
        except CanonError as exc:  # a mis-scripted judge, a refused request: never a pass
            cause = f"{type(exc).__name__}: {exc}"
            return Judged(Decision(DecisionKind.UNSCORED, trace_id, self.clock(), cause=cause))
        finally:
            if self.budget is not None and reserved is not None:
                self.budget.settle(reserved, spent, now, self.clock())
        return Judged(_decision(result, trace_id, self.clock(), spent), result)


def _held(budget: Budget, now: float, clock: Callable[[], float]) -> float | None:
    """A reservation, waiting (up to ``WAIT_MAX`` seconds) while the first trace's cost is
    being learnt; None when the trace does not fit (or the wait ran out)."""
    deadline = clock() + WAIT_MAX
    while True:
        amount = budget.reserve(now)
        if amount != WAIT or clock() > deadline:
            return amount if isinstance(amount, float) else None
        time.sleep(0.05)
        now = clock()


WAIT_MAX = 120.0


def _decision(result: ArtifactResult, trace_id: str, now: float, cost: float) -> Decision:
    if result.stopped_by is not None:
        cause = f"{result.stopped_by}: " + "; ".join(map(str, result.reasons))
        return Decision(DecisionKind.GATE_FAILED, trace_id, now, cause=cause, cost=cost)
    verdict = verdict_of(result)
    if verdict is Verdict.INCOMPLETE:
        first = result.unscored[0]
        cause = f"{first.error_type or 'JudgeError'}: {first.error or 'no answer'}"
        return Decision(DecisionKind.UNSCORED, trace_id, now, cause=cause, cost=cost)
    principles = {
        cell.id: not plainly_violated(cell)
        for cell in result.cells
        if cell.question.kind == "principle" and cell.state == "answered"
    }
    return Decision(
        DecisionKind.JUDGED, trace_id, now, verdict.value, result.score, principles, cost=cost
    )


OnJudged = Callable[[Judged, Execution], None]


def decide_fields(
    judge: OnlineJudge | None,
    contract: Contract | None,
    execution: Execution,
    verdict: ContractVerdict | None,
    on_judged: OnJudged | None,
) -> tuple[dict[str, object], Callable[[], None] | None]:
    """What judging adds to a trace's audit record (its decision), and the call that sends
    its verdict onward (``on_judged``, e.g. OpenTelemetry events) when the judge was asked;
    nothing without a judge. The record carries the trace's once key (``OnlineJudge.key``),
    so a span that comes after it is known late. The monitors send the verdict as they send
    an alert: once per trace."""
    if judge is None:
        return {}, None
    judged = judge.decide(execution, verdict)
    fields: dict[str, object] = {
        DECISION_FIELD: judged.decision.to_dict(),
        ONCE_FIELD: judge.key(execution.execution_id, contract),
    }
    if on_judged is None or judged.result is None:
        return fields, None
    return fields, lambda: on_judged(judged, execution)


def late_record(trace: str, trace_id: str, at: float, cause: str) -> dict[str, Any]:
    """The record of spans that came after their trace was decided: ``late``, never judged
    (the Redis worker and the file monitors write the same)."""
    decision = Decision(DecisionKind.LATE, trace_id, at, cause=cause)
    return {"trace": trace, TRACE_ID_FIELD: trace_id, DECISION_FIELD: decision.to_dict()}


def together(*calls: Callable[[], None] | None) -> Callable[[], None] | None:
    """One call making each of ``calls`` that is given, in order; None when none is."""
    given = [call for call in calls if call is not None]
    if not given:
        return None

    def run() -> None:
        for call in given:
            call()

    return run

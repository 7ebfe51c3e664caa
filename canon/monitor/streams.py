"""The Redis Streams engine: spans in, one decision per trace out, across many workers.

``canon monitor ingest`` appends each trace's spans to one of N streams chosen by a hash
of the trace id (``append_spans``). Workers (``run_worker``) form one consumer group over
the streams and share everything through Redis, so any worker can finish any trace:

1. Read entries with ``XREADGROUP`` (and, with ``XAUTOCLAIM``, the entries a dead worker
   read but never handled, once idle for ``claim_idle`` seconds). Each entry is filed in
   one Lua script: its spans appended to the trace's list, the trace's first/last arrival
   and "root ended" noted, and the entry acknowledged, all or nothing. An entry for a
   trace already decided is recorded as ``late`` in the same step, never judged.
2. Find settled traces (``canon.core.online.settled``), take a lease on one (``SET NX PX``:
   a dead worker's lease runs out), assemble and normalize its spans, run the contract,
   decide it (``canon.monitor.judging``: sample, budget, judge), send its verdict events
   (marked sent in Redis, as the file monitors journal an alert), then record it.
3. Recording is one Lua script: the once key (trace id, contract digest, constitution
   digest) is set only if new (``SET NX``) and then the record appended to the records
   stream; the trace is marked decided and its spans, lease and timers removed. A trace
   whose key already has a record (its worker died after recording) is finished without a
   second record; a redelivered entry never makes one.

What Redis keeps is bounded: a filed entry is deleted from its stream as it is
acknowledged (a pending one stays), the once keys expire after ``retention`` seconds, and
each new record trims the records older than that.

The day's budget is a Redis hash per UTC day, changed in optimistic transactions
(``WATCH``/``MULTI``) by ``reservation``'s rule, so every worker of the group draws on it.
``redis`` (the PyPI client) is imported only by the functions that talk to Redis.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from canon.core.online import (
    DEFAULT_SETTLE,
    DEFAULT_SETTLE_MAX,
    Decision,
    DecisionKind,
    budget_day,
    reservation,
    sampled,
    settled,
    stream_of,
)
from canon.errors import CanonError, InputError
from canon.gates.contracts.audit import create_audit_record
from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.model import Contract
from canon.gates.contracts.validate import validate
from canon.monitor.judging import (
    NO_CONTRACT,
    Judged,
    OnJudged,
    OnlineJudge,
    contract_digest,
    late_record,
)
from canon.monitor.ledger import DECISION_FIELD

INSTALL_LINE = 'pip install "canon-testing[online]"'
DEFAULT_PREFIX = "canon"
DEFAULT_STREAMS = 4
DEFAULT_CLAIM_IDLE = 30.0  # seconds an entry stays with a silent worker before it is claimed
DEFAULT_LEASE = 120.0  # seconds a worker holds a trace it is deciding
DEFAULT_RETENTION = 7 * 86_400.0  # seconds a decision's record and once key are kept
GROUP = "canon-workers"
BUDGET_TTL = 3 * 86_400  # a day's budget hash outlives its day by two


class RedisUnavailableError(InputError):
    """The redis client is missing, or the Redis server cannot be reached."""


def connect(url: str) -> Any:
    """A client for ``url`` (redis://host:port/db), checked with a PING."""
    try:
        import redis
    except ImportError:
        raise RedisUnavailableError(
            f"the Redis engine needs the redis client, which is not installed: {INSTALL_LINE}"
        ) from None
    try:
        client = redis.Redis.from_url(url, decode_responses=True)
        client.ping()
    except ValueError as exc:
        raise RedisUnavailableError(f"--redis {url}: not a Redis URL ({exc})") from None
    except redis.RedisError as exc:
        raise RedisUnavailableError(f"--redis {url}: cannot reach Redis: {exc}") from None
    return client


@dataclass(frozen=True, slots=True)
class Keys:
    """Every Redis key of one deployment (``prefix``), in one place."""

    prefix: str = DEFAULT_PREFIX

    def stream(self, index: int) -> str:
        return f"{self.prefix}:spans:{index}"

    def spans(self, trace_id: str) -> str:
        return f"{self.prefix}:trace:{trace_id}"

    def meta(self, trace_id: str) -> str:
        return f"{self.prefix}:meta:{trace_id}"

    def lease(self, trace_id: str) -> str:
        return f"{self.prefix}:lease:{trace_id}"

    def budget(self, day: str) -> str:
        return f"{self.prefix}:budget:{day}"

    @property
    def pending(self) -> str:  # trace id -> its last arrival
        return f"{self.prefix}:pending"

    @property
    def born(self) -> str:  # trace id -> its first arrival
        return f"{self.prefix}:born"

    # One string per trace or once key, each expiring after the retention (Redis 7.0 has
    # no expiry for a hash's fields), so the memory of what was decided does not grow.

    def decided(self, trace_id: str) -> str:  # -> the once key of the trace's decision
        return f"{self.prefix}:decided:{trace_id}"

    def done(self, once: str) -> str:  # -> the worker that recorded it
        return f"{self.prefix}:done:{once}"

    def sent(self, once: str) -> str:  # -> the worker that sent its verdict events
        return f"{self.prefix}:sent:{once}"

    def judging(self, once: str) -> str:  # -> the worker that began judging it
        return f"{self.prefix}:judging:{once}"

    @property
    def records(self) -> str:  # every record, in the order they were made
        return f"{self.prefix}:records"


# ---------------------------------------------------------------- ingest


def append_spans(
    client: Any, keys: Keys, streams: int, batches: Iterable[tuple[str, str, bool]]
) -> int:
    """Append each (trace id, OTLP JSON document, root ended) to its trace's stream, in one
    round trip; returns how many entries were added."""
    pipe = client.pipeline(transaction=False)
    count = 0
    for trace_id, document, root in batches:
        fields = {"trace": trace_id, "doc": document, "root": "1" if root else "0"}
        pipe.xadd(keys.stream(stream_of(trace_id, streams)), fields)
        count += 1
    if count:
        pipe.execute()
    return count


# ---------------------------------------------------------------- Lua scripts

_FILE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('XADD', KEYS[6], '*', 'record', ARGV[7])
else
  redis.call('RPUSH', KEYS[2], ARGV[2])
  if redis.call('HSETNX', KEYS[3], 'first', ARGV[3]) == 1 then
    redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
  end
  redis.call('HSET', KEYS[3], 'last', ARGV[3])
  if ARGV[4] == '1' then redis.call('HSET', KEYS[3], 'root', '1') end
  redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
end
local acked = redis.call('XACK', KEYS[7], ARGV[5], ARGV[6])
redis.call('XDEL', KEYS[7], ARGV[6])
return acked
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RECORD = """
local new = 0
if redis.call('SET', KEYS[1], ARGV[6], 'NX', 'PX', ARGV[7]) then
  new = 1
  redis.call('XADD', KEYS[3], '*', 'record', ARGV[3])
  redis.call('XTRIM', KEYS[3], 'MINID', ARGV[8])
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[7])
if redis.call('LLEN', KEYS[4]) > tonumber(ARGV[4]) then
  redis.call('XADD', KEYS[3], '*', 'record', ARGV[5])
end
redis.call('DEL', KEYS[4], KEYS[5], KEYS[8])
redis.call('ZREM', KEYS[6], ARGV[2])
redis.call('ZREM', KEYS[7], ARGV[2])
return new
"""


# ---------------------------------------------------------------- budget


@dataclass
class RedisBudget:
    """``--budget`` shared by every worker of a group: one Redis hash per UTC day."""

    client: Any
    keys: Keys
    limit: float

    def reserve(self, now: float) -> float | Literal["wait"] | None:
        key = self.keys.budget(budget_day(now))
        found: list[float | Literal["wait"] | None] = [None]

        def attempt(pipe: Any) -> None:
            state = pipe.hgetall(key)
            amount = reservation(
                self.limit,
                float(state.get("spent", 0)),
                float(state.get("reserved", 0)),
                float(state.get("largest", 0)),
                int(state.get("in_flight", 0)),
            )
            found[0] = amount
            if not isinstance(amount, float):
                return
            pipe.multi()
            pipe.hincrbyfloat(key, "reserved", amount)
            pipe.hincrby(key, "in_flight", 1)
            pipe.expire(key, BUDGET_TTL)

        self.client.transaction(attempt, key)
        return found[0]

    def settle(self, reserved: float, spent: float, reserved_at: float, now: float) -> None:
        # the reservation is released on the day it was made; the spend counts on today's
        held, key = self.keys.budget(budget_day(reserved_at)), self.keys.budget(budget_day(now))

        def attempt(pipe: Any) -> None:
            largest = float(pipe.hget(key, "largest") or 0)
            pipe.multi()
            pipe.hincrbyfloat(held, "reserved", -reserved)
            pipe.hincrby(held, "in_flight", -1)
            pipe.hincrbyfloat(key, "spent", spent)
            pipe.hset(key, "largest", max(largest, spent))
            pipe.expire(key, BUDGET_TTL)

        self.client.transaction(attempt, key, held)

    def resume(self, spent: Mapping[str, float], largest: float) -> None:
        """Nothing to resume: the spend lives in Redis, across every worker and restart."""

    def spent(self, now: float) -> float:
        """What the group spent on ``now``'s day."""
        return float(self.client.hget(self.keys.budget(budget_day(now)), "spent") or 0)


# ---------------------------------------------------------------- worker


@dataclass
class WorkerStats:
    """What one worker did."""

    entries: int = 0
    decided: int = 0
    recorded: int = 0  # decisions that made a new record (not already recorded)
    claimed: int = 0  # entries taken over from a silent worker
    interrupted: bool = False


@dataclass
class Worker:
    """One member of the consumer group."""

    client: Any
    keys: Keys
    streams: int
    contract: Contract | None = None
    judge: OnlineJudge | None = None
    on_judged: OnJudged | None = None
    source_map: Mapping[str, DataSource] | None = None
    name: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    settle: float = DEFAULT_SETTLE
    settle_max: float = DEFAULT_SETTLE_MAX
    claim_idle: float = DEFAULT_CLAIM_IDLE
    lease: float = DEFAULT_LEASE
    retention: float = DEFAULT_RETENTION
    batch: int = 200
    block: float = 0.2
    concurrency: int = 8
    clock: Callable[[], float] = time.time
    on_record: Callable[[Mapping[str, Any]], None] | None = None
    stats: WorkerStats = field(default_factory=WorkerStats)

    def __post_init__(self) -> None:
        self._file = self.client.register_script(_FILE)
        self._record = self.client.register_script(_RECORD)
        self._renew = self.client.register_script(_RENEW)
        self._retention_ms = max(1, int(self.retention * 1000))
        digest = NO_CONTRACT if self.contract is None else contract_digest(self.contract)
        self._contract_digest = digest
        self._cursors = {self.keys.stream(i): "0-0" for i in range(self.streams)}
        self._inflight: dict[str, Future[bool | None]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def join(self) -> None:
        """Create the group on every stream (idempotent: an existing group is kept)."""
        import redis

        for index in range(self.streams):
            try:
                self.client.xgroup_create(self.keys.stream(index), GROUP, id="0", mkstream=True)
            except redis.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    def step(self) -> int:
        """Claim, read and file entries, then decide settled traces; the entries filed."""
        filed = 0
        for stream in self._cursors:
            cursor, claimed, _ = self.client.xautoclaim(
                stream, GROUP, self.name, int(self.claim_idle * 1000), self._cursors[stream], 100
            )
            self._cursors[stream] = cursor
            self.stats.claimed += len(claimed)
            filed += self._file_entries(stream, claimed)
        read = self.client.xreadgroup(
            GROUP,
            self.name,
            dict.fromkeys(self._cursors, ">"),
            count=self.batch,
            # judging in flight: look again soon, to file and decide what comes meanwhile
            block=max(1, int((0.02 if self._inflight else self.block) * 1000)),
        )
        for stream, entries in read or ():
            filed += self._file_entries(stream, entries)
        self.decide_settled()
        return filed

    def _file_entries(self, stream: str, entries: Sequence[Any]) -> int:
        filed = 0
        pipe = self.client.pipeline(transaction=False)
        now = self.clock()
        for entry_id, fields in entries:
            if not fields:
                continue  # deleted from the stream while pending: nothing to file
            trace_id = str(fields.get("trace", "")).lower()
            self._file(
                keys=[
                    self.keys.decided(trace_id),
                    self.keys.spans(trace_id),
                    self.keys.meta(trace_id),
                    self.keys.pending,
                    self.keys.born,
                    self.keys.records,
                    stream,
                ],
                args=[
                    trace_id,
                    fields.get("doc", ""),
                    repr(now),
                    fields.get("root", "0"),
                    GROUP,
                    entry_id,
                    json.dumps(self._late(trace_id, now, "a span came after")),
                ],
                client=pipe,
            )
            filed += 1
        if filed:
            pipe.execute()
        self.stats.entries += filed
        return filed

    def _late(self, trace_id: str, at: float, cause: str) -> dict[str, Any]:
        return {**late_record(f"redis:{trace_id}", trace_id, at, cause), "worker": self.name}

    def settled_traces(self, limit: int = 256) -> list[str]:
        """Traces complete now, oldest first (at most ``limit``)."""
        now = self.clock()
        quiet = self.client.zrangebyscore(self.keys.pending, "-inf", now - self.settle, 0, limit)
        old = self.client.zrangebyscore(self.keys.born, "-inf", now - self.settle_max, 0, limit)
        ready: list[str] = []
        pipe = self.client.pipeline(transaction=False)
        candidates = list(dict.fromkeys([*old, *quiet]))
        for trace_id in candidates:
            pipe.hgetall(self.keys.meta(trace_id))
        for trace_id, meta in zip(candidates, pipe.execute() if candidates else [], strict=True):
            if not meta:
                continue  # finished since the scan
            if settled(
                now,
                first_seen=float(meta.get("first", now)),
                last_seen=float(meta.get("last", now)),
                root_ended=meta.get("root") == "1",
                settle=self.settle,
                settle_max=self.settle_max,
            ):
                ready.append(trace_id)
        return ready

    def decide_settled(self) -> int:
        """Decide the settled traces: those the sample leaves out here and now, those it
        picks on the judging threads (``concurrency`` at once, while this loop goes on
        reading); how many were started or decided."""
        self._reap()
        started = 0
        for trace_id in self.settled_traces():
            if trace_id in self._inflight:
                continue
            judge = self.judge
            if judge is not None and sampled(trace_id, judge.rate, judge.salt):
                if len(self._inflight) >= 2 * self.concurrency:
                    continue  # a short queue: its lease is taken only when a thread starts
                self._inflight[trace_id] = self._judging().submit(self.decide, trace_id)
                started += 1
            elif self.decide(trace_id) is not None:
                started += 1
        return started

    def _judging(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="canon-judge")
        return self._pool

    def _reap(self) -> None:
        """Forget finished judging; a thread's error is raised here, never swallowed."""
        for trace_id, future in list(self._inflight.items()):
            if future.done():
                del self._inflight[trace_id]
                future.result()

    @property
    def busy(self) -> bool:
        """Whether traces are being judged on this worker's threads."""
        return bool(self._inflight)

    def drain(self) -> None:
        """Wait for every trace being judged, then stop the judging threads."""
        try:
            for future in list(self._inflight.values()):
                future.result()
        finally:
            self._inflight.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def decide(self, trace_id: str) -> bool | None:
        """Lease one settled trace, decide it and record it: True when this made its
        record, False when it was recorded before, None when another worker has it (or
        finished it since the scan)."""
        lease = self.keys.lease(trace_id)
        if not self.client.set(lease, self.name, nx=True, px=int(self.lease * 1000)):
            return None
        if not self.client.exists(self.keys.meta(trace_id)):
            self.client.delete(lease)  # finished by another worker since the scan
            return None
        if self.judge is None:
            return self._decide(trace_id)  # a contract takes milliseconds: no renewal
        with self._holding(lease):
            return self._decide(trace_id)

    @contextlib.contextmanager
    def _holding(self, lease: str) -> Iterator[None]:
        """Renew the lease every third of its time while this worker works on the trace:
        a slow judge never lets it run out under a live worker; a dead one's runs out."""
        done = threading.Event()
        period = self.lease / 3

        def renew() -> None:
            while not done.wait(period):
                with contextlib.suppress(Exception):  # a Redis hiccup: the next try renews
                    self._renew(keys=[lease], args=[self.name, int(self.lease * 1000)])

        beat = threading.Thread(target=renew, daemon=True)
        beat.start()
        try:
            yield
        finally:
            done.set()
            beat.join()

    def _decide(self, trace_id: str) -> bool:
        documents = self.client.lrange(self.keys.spans(trace_id), 0, -1)
        key = self._once_key(trace_id)
        if self.client.exists(self.keys.done(key)):
            record: dict[str, Any] | None = None  # its worker died after recording it
        else:
            record = self._record_of(trace_id, documents, key)
        now = self.clock()
        new = self._record(
            keys=[
                self.keys.done(key),
                self.keys.decided(trace_id),
                self.keys.records,
                self.keys.spans(trace_id),
                self.keys.meta(trace_id),
                self.keys.pending,
                self.keys.born,
                self.keys.lease(trace_id),
            ],
            args=[
                key,
                trace_id,
                json.dumps(record or {}, sort_keys=True),
                len(documents),
                json.dumps(
                    self._late(trace_id, now, "a span came while the trace was being decided")
                ),
                self.name,
                self._retention_ms,
                f"{max(0, int((now - self.retention) * 1000))}-0",  # older records go
            ],
        )
        self.stats.decided += 1
        if new == 1 and record is not None:
            self.stats.recorded += 1
            if self.on_record is not None:
                self.on_record(record)
        return bool(new)

    def _once_key(self, trace_id: str) -> str:
        from canon.core.online import once_key

        constitution = NO_CONTRACT if self.judge is None else self.judge.plan.constitution.digest
        return once_key(trace_id, self._contract_digest, constitution)

    def _record_of(self, trace_id: str, documents: Sequence[str], key: str) -> dict[str, Any]:
        from canon.gates.contracts.otel import normalize_trace

        source = f"redis:{trace_id}"
        base: dict[str, Any] = {"trace": source, "trace_id": trace_id, "worker": self.name}
        base["monitor_key"] = key
        try:
            merged = merge_documents(documents)
            execution = normalize_trace(merged, source=source)
        except (CanonError, ValueError) as exc:
            decision = Decision(
                DecisionKind.UNSCORED, trace_id, self.clock(), cause=f"unreadable trace: {exc}"
            )
            return {
                **base,
                "verdict": {"status": "error"},
                "error": str(exc),
                DECISION_FIELD: decision.to_dict(),
            }
        verdict = None
        if self.contract is not None:
            mapping = self.contract.source_map if self.source_map is None else self.source_map
            verdict = validate(self.contract, execution, source_map=mapping)
            audit = create_audit_record(verdict, execution, source_map=mapping, trace=source)
            base = {**audit.to_dict(), **base}
        if self.judge is None:
            return base
        judged = self.judge.decide(execution, verdict, lambda: self._start_judging(key))
        if self.on_judged is not None and judged.result is not None:
            self._send_once(key, lambda: self._judged(judged, execution))
        return {**base, DECISION_FIELD: judged.decision.to_dict()}

    def _judged(self, judged: Judged, execution: Execution) -> None:
        assert self.on_judged is not None
        self.on_judged(judged, execution)

    def _start_judging(self, key: str) -> str | None:
        """Mark the trace's judging begun (once per once key); the cause to record instead
        when a worker began it before and died before recording it."""
        if self.client.set(self.keys.judging(key), self.name, nx=True, px=self._retention_ms):
            return None
        return (
            f"worker {self.client.get(self.keys.judging(key))} died while judging it; "
            "a trace is judged at most once, so the judge is not asked again"
        )

    def _send_once(self, key: str, send: Callable[[], None]) -> None:
        """Mark sent, send, then (the caller) record: events go out at most once; a kill
        during the send loses that trace's events (or their rest), never repeats them."""
        if self.client.set(self.keys.sent(key), self.name, nx=True, px=self._retention_ms):
            send()


def merge_documents(documents: Sequence[str]) -> dict[str, Any]:
    """One OTLP JSON document holding the resource spans of every entry of a trace."""
    resource_spans: list[Any] = []
    for text in documents:
        document = json.loads(text)
        if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
            raise ValueError("a stream entry is not an OTLP JSON document")
        resource_spans.extend(document["resourceSpans"])
    return {"resourceSpans": resource_spans}


DEFAULT_RECONNECT = 60.0  # seconds a worker waits for a Redis that went away


def run_worker(
    worker: Worker,
    *,
    stop: Callable[[], bool] | None = None,
    max_steps: int | None = None,
    reconnect: float = DEFAULT_RECONNECT,
    sleep: Callable[[float], None] = time.sleep,
) -> WorkerStats:
    """Join the group and work until ``stop()``, ``max_steps`` steps, or Ctrl-C (the
    traces being judged are finished and recorded first). A Redis
    that goes away (a restart) is waited for, retrying with a growing pause, for up to
    ``reconnect`` seconds; then a ``RedisUnavailableError``."""
    import redis

    worker.join()
    steps = 0
    lost: float | None = None
    try:
        while True:
            try:
                worker.step()
                steps += 1
                done = (max_steps is not None and steps >= max_steps) or (
                    stop is not None and stop()
                )
                lost = None
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError) as exc:
                now = time.monotonic()
                lost = now if lost is None else lost
                if now - lost >= reconnect:
                    raise RedisUnavailableError(
                        f"Redis went away and did not come back within {reconnect:g} s: {exc}"
                    ) from None
                sleep(min(2.0, 0.1 + (now - lost) / 4))
                with contextlib.suppress(redis.RedisError):
                    worker.join()  # a Redis restarted without its data needs the group again
                continue
            if done:
                return worker.stats
    except KeyboardInterrupt:
        worker.stats.interrupted = True
        return worker.stats
    finally:
        worker.drain()  # the traces being judged are recorded before the worker ends


def read_records(client: Any, keys: Keys, batch: int = 1000) -> list[dict[str, Any]]:
    """Every record of the deployment, oldest first."""
    found: list[dict[str, Any]] = []
    start = "-"
    while True:
        entries = client.xrange(keys.records, start, "+", count=batch)
        for entry_id, fields in entries:
            try:
                found.append(json.loads(fields["record"]))
            except (KeyError, ValueError):
                raise InputError(
                    f"redis {keys.records} entry {entry_id} is not a Canon record"
                ) from None
        if len(entries) < batch:
            return found
        start = "(" + entries[-1][0]

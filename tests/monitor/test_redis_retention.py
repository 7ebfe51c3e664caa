"""What the Redis engine keeps, against a real redis-server: an entry leaves its stream once
filed and acknowledged (one still pending stays), a decision's once key and record are kept
for the retention and then go, and a day's budget key expires."""

from __future__ import annotations

import json
import time
from typing import Any

from canon.core.online import budget_day
from canon.monitor.streams import (
    BUDGET_TTL,
    GROUP,
    Keys,
    RedisBudget,
    Worker,
    connect,
    read_records,
)

from support.online import trace_document, trace_id


def _append(client: Any, keys: Keys, idents: list[str]) -> None:
    for ident in idents:
        doc = json.dumps(trace_document(ident))
        client.xadd(keys.stream(0), {"trace": ident, "doc": doc, "root": "1"})


def test_filed_entries_leave_the_stream_and_pending_ones_stay_until_filed(
    redis_url: str,
) -> None:
    client = connect(redis_url)
    keys = Keys("trim")
    worker = Worker(client, keys, 1, settle=600, settle_max=600, name="live")
    worker.join()
    idents = [trace_id(n) for n in range(6)]
    _append(client, keys, idents)
    # a worker that read two entries and died before filing them
    [(_, taken)] = client.xreadgroup(GROUP, "dead", {keys.stream(0): ">"}, count=2)
    worker.step()
    assert client.xlen(keys.stream(0)) == 2  # the four filed ones are gone
    assert [entry_id for entry_id, _ in client.xrange(keys.stream(0))] == [i for i, _ in taken]
    assert client.xpending(keys.stream(0), GROUP)["pending"] == 2
    # once idle long enough, another worker claims them, files them, and they go too
    time.sleep(0.1)
    claimer = Worker(client, keys, 1, settle=600, settle_max=600, claim_idle=0.05, name="heir")
    claimer.step()
    assert client.xlen(keys.stream(0)) == 0
    assert client.xpending(keys.stream(0), GROUP)["pending"] == 0
    assert client.zcard(keys.pending) == 6  # every trace's spans were filed, none lost


def test_a_decision_is_kept_for_the_retention_then_its_keys_and_record_go(
    redis_url: str,
) -> None:
    client = connect(redis_url)
    keys = Keys("keep")
    worker = Worker(client, keys, 1, settle=0, settle_max=60, retention=1.0)
    worker.join()
    first = trace_id(1)
    _append(client, keys, [first])
    worker.step()
    once = worker._once_key(first)
    assert 0 < client.pttl(keys.done(once)) <= 1000
    assert 0 < client.pttl(keys.decided(first)) <= 1000
    # delivered again within the retention (its worker died after recording it): no
    # second record
    doc = json.dumps(trace_document(first))
    client.rpush(keys.spans(first), doc)
    client.hset(keys.meta(first), mapping={"first": "1", "last": "1", "root": "1"})
    assert worker.decide(first) is False
    assert [r["trace_id"] for r in read_records(client, keys)] == [first]
    time.sleep(1.1)  # past the retention: the once keys expired
    assert not client.exists(keys.done(once), keys.decided(first))
    second = trace_id(2)
    _append(client, keys, [second])
    worker.step()  # a new record trims the records older than the retention
    assert [r["trace_id"] for r in read_records(client, keys)] == [second]


def test_a_days_budget_key_expires(redis_url: str) -> None:
    client = connect(redis_url)
    keys = Keys("ttl")
    budget = RedisBudget(client, keys, 1.0)
    now = time.time()
    assert budget.reserve(now) == 0.0
    budget.settle(0.0, 0.1, now, now)
    assert 0 < client.ttl(keys.budget(budget_day(now))) <= BUDGET_TTL

"""Which runs a file holds: its spans grouped by trace id into separate executions.

Several trace ids alone are not several runs: a setup span (``create_agent``) is often
exported as a trace of its own, and two instrumentations of one run (ADK's own spans and
Monocle's) each start a trace. So traces whose time ranges overlap are one run, and a
setup-only trace joins the run it sets up (the first that ends after it starts, else the
last one). Everything else is a run of its own, in start order.
"""

from __future__ import annotations

from itertools import repeat

from canon.gates.contracts.otel.rawspan import OtlpRun, RawSpan
from canon.gates.contracts.otel.spans import SpanBatch
from canon.gates.contracts.otel.values import normalize_id


def trace_ids(entries: list[RawSpan | OtlpRun]) -> list[str]:
    """The distinct non-empty trace ids of the spans, in order of first appearance."""
    found: dict[str, None] = {}
    for entry in entries:
        if isinstance(entry, OtlpRun):
            try:
                if entry.typed:
                    from canon.gates.contracts.otel.typed import field_column

                    values = field_column(entry.spans, "traceId")
                else:
                    values = list(map(dict.get, entry.spans, repeat("traceId")))
                # one id, the usual run: compared, not hashed
                one = values.count(values[0]) == len(values)
                raw = dict.fromkeys(values[:1] if one else values)
            except TypeError:  # an unhashable id: normalized one by one below
                raw = dict.fromkeys(str(span.get("traceId")) for span in entry.spans)
            for value in raw:
                normalized = normalize_id(value, 32)
                if normalized:
                    found[normalized] = None
        elif entry.trace_id:
            # decoded already: its reader kept ids that mean a trace (a Datadog snapshot's 0)
            found[entry.trace_id] = None
    return list(found)


def run_groups(batch: SpanBatch) -> list[list[str]]:
    """The trace ids of each run in the file, runs in start order (one group: one run)."""
    ids = trace_ids(batch.entries)  # one pass over the spans: most files hold one run
    if len(ids) < 2:
        return [ids]
    ranges: dict[str, list[int]] = {}
    working: set[str] = set()
    for span in batch.spans:
        trace_id = span.trace_id
        if not trace_id:
            continue
        if not is_setup(span):
            working.add(trace_id)
        end = max(span.end_ns, span.start_ns)
        found = ranges.setdefault(trace_id, [span.start_ns, end])
        found[0] = min(found[0], span.start_ns)
        found[1] = max(found[1], end)
    setups = {trace_id: ranges.pop(trace_id) for trace_id in set(ranges) - working}
    groups: list[list[str]] = []
    spans: list[list[int]] = []  # each group's [start, end]
    for trace_id, (start, end) in sorted(ranges.items(), key=lambda item: item[1][0]):
        if groups and start <= spans[-1][1]:
            groups[-1].append(trace_id)  # overlapping traces: one run
            spans[-1][1] = max(spans[-1][1], end)
        else:
            groups.append([trace_id])
            spans.append([start, end])
    if not groups:  # setup traces only: nothing ran, so nothing is told apart
        return [trace_ids(batch.entries)]
    for trace_id, (start, _) in sorted(setups.items(), key=lambda item: item[1][0]):
        at = next((n for n, (_, end) in enumerate(spans) if end >= start), len(groups) - 1)
        groups[at].append(trace_id)
    return groups


def split_runs(batch: SpanBatch, groups: list[list[str]]) -> list[SpanBatch]:
    """One batch per run; spans without a trace id go with the first run."""
    where = {trace_id: at for at, group in enumerate(groups) for trace_id in group}
    parts: list[list[RawSpan | OtlpRun]] = [[] for _ in groups]
    for span in batch.spans:
        part = parts[where.get(span.trace_id, 0)]
        part.append(span._replace(position=len(part)))
    return [
        SpanBatch(
            part,
            batch.resource,
            None,
            batch.log_records,
            batch.unjoined_logs,
            formats=batch.formats,
            runs=len(groups),
        )
        for part in parts
    ]


def is_setup(span: RawSpan) -> bool:
    """A span that only creates an agent (exported as a trace of its own by some SDKs)."""
    operation = span.attributes.get("gen_ai.operation.name")
    return operation == "create_agent" or span.name.startswith("create_agent")

"""LangSmith runs: a run tree (a run with its ``child_runs``), a list of runs (``{"runs":
[...]}``: the API's run list, a rule's webhook), and run uploads (``{"post": [...]}`` and
``{"patch": [...]}``, apart or in one batch, as the SDK sends them).

A run is a step: its ``run_type`` (``llm``, ``tool``, ``chain``, ``retriever`` ...) is its
kind, its ``inputs``/``outputs`` are its payloads (``records.py``), ``error`` fails it.
A child run's parent is the run it sits under unless it names another (``parent_run_id``);
its trace is its root's. A patch completes the run posted before it (its outputs, end time,
error); a patch for a run no post in the file creates is refused, never read as a run.
"""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat, Where, text, type_name
from canon.gates.contracts.otel.formats.records import (
    listed_records,
    payload,
    record_attributes,
    record_id,
    record_span,
    refuse_held,
)
from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.values import to_nanos

_LISTS = ("runs", "post", "patch")
# what a run holds of its own: the rest must hold no spans (else it is a container)
_RUN_PARTS = frozenset(
    {"inputs", "outputs", "extra", "events", "child_runs", "serialized", "attachments", "tags"}
)
_MAX_DEPTH = 200  # child_runs nested deeper than any agent runs: refused, not a recursion error


def is_run(raw: dict[str, Any]) -> bool:
    """Whether a JSON object is a LangSmith run."""
    return isinstance(raw.get("run_type"), str) and ("id" in raw or "name" in raw)


def _claims(raw: dict[str, Any]) -> bool:
    if is_run(raw):
        return True
    for key in _LISTS:
        held = raw.get(key)
        if isinstance(held, list) and any(isinstance(item, dict) and "id" in item for item in held):
            # a run list, or an upload (a patch need not repeat the run's type)
            return key == "patch" or any(isinstance(i, dict) and is_run(i) for i in held)
    return False


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    if is_run(raw):
        _read_run(raw, sink, where, "", "", 0)
        return
    refuse_held(raw, frozenset(_LISTS), sink, where)
    # a batch holds its posts before its patches
    for key, run, place in listed_records(raw, _LISTS, sink, where, "a LangSmith run"):
        if key == "patch":
            _patch(run, sink, place)
        else:
            _read_run(run, sink, place, "", "", 0)


def _read_run(
    run: dict[str, Any], sink: SpanSink, where: str, parent: str, trace: str, depth: int
) -> None:
    if depth > _MAX_DEPTH:
        raise sink.fail(f"LangSmith child_runs nested over {_MAX_DEPTH} deep at {where}")
    run_id = record_id(run.get("id"))
    name = run.get("name")
    if not run_id or not isinstance(name, str) or not name.strip():
        raise sink.fail(f"a LangSmith run without an id or a name at {where}")
    refuse_held(run, _RUN_PARTS, sink, where)
    kind = run.get("run_type")
    if not isinstance(kind, str):
        raise sink.fail(f"a LangSmith run whose run_type is {type_name(kind)} at {where}")
    parent = record_id(run.get("parent_run_id")) or parent
    trace = record_id(run.get("trace_id"), 32) or trace or run_id
    attributes = record_attributes(kind, name, run.get("inputs"), run.get("outputs"), _model(run))
    attributes["langsmith.run_type"] = kind
    times = (run.get("start_time"), run.get("end_time"))
    ids = (trace, run_id, parent)
    sink.add(record_span(sink, ids, name, times, _status(run), attributes, "langsmith"))
    children = run.get("child_runs")
    if children is None:
        return
    if not isinstance(children, list):
        raise sink.fail(f"'child_runs' holding {type_name(children)} at {where}")
    for at, child in enumerate(children):
        if not isinstance(child, dict) or not is_run(child):
            raise sink.fail(f"{type_name(child)} at {where}.child_runs[{at}], not a LangSmith run")
        _read_run(child, sink, f"{where}.child_runs[{at}]", run_id, trace, depth + 1)


def _patch(run: dict[str, Any], sink: SpanSink, where: str) -> None:
    """Complete the posted run this patch names with what the patch adds."""
    run_id = record_id(run.get("id"))

    def completed(span: RawSpan) -> RawSpan:
        attributes = dict(span.attributes)
        if run.get("outputs") is not None:
            attributes["output.value"] = payload(run["outputs"])
        end = to_nanos(run.get("end_time")) or span.end_ns
        status: StepStatus = "error" if _status(run) == "error" else span.status
        return span._replace(end_ns=end, status=status, attributes=attributes)

    if not run_id or not sink.amend(run_id, completed):
        raise sink.fail(
            f"a LangSmith patch at {where} for run {text(run.get('id')) or '(no id)'} that no "
            "post before it in the file creates"
        )


def _status(run: dict[str, Any]) -> StepStatus:
    error = run.get("error")
    return "error" if (error not in (None, "", {}) or run.get("status") == "error") else "unset"


def _model(run: dict[str, Any]) -> object:
    extra = run.get("extra")
    metadata = extra.get("metadata") if isinstance(extra, dict) else None
    if isinstance(metadata, dict) and isinstance(metadata.get("ls_model_name"), str):
        return metadata["ls_model_name"]
    inputs = run.get("inputs")
    return inputs.get("model") if isinstance(inputs, dict) else None


FORMAT = TraceFormat(
    name="langsmith",
    title="LangSmith runs",
    expected="LangSmith runs",
    shape='a run tree (`run_type`, `child_runs`, `parent_run_id`, UUID ids), `{"runs": [...]}` '
    '(the API\'s list, a webhook), run uploads `{"post": [...]}`/`{"patch": [...]}` (a patch '
    "completes its posted run); `run_type` is the step kind, `inputs`/`outputs` its payloads, "
    "`error` fails it",
    learned_from="langchain-ai/langsmith-sdk (wrap_openai uploads)",
    claims=_claims,
    keys=("run_type", *_LISTS),
    read=_read,
    at=(Where.DOCUMENT, Where.ITEM),
)

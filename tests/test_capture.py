"""capture_trace() and the canon_trace fixture: a test's OpenTelemetry spans, recorded
in-process through the real SDK, from a real instrumentor of the openai client calling a
local OpenAI-compatible server, and handed to the contract gate."""

from __future__ import annotations

import asyncio
import contextvars
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry import trace as trace_api

import canon
from canon import Artifact, CoherenceMetric, capture_trace
from canon.check.capture import traced_artifact
from canon.errors import UsageError
from canon.gates.contracts import TraceError
from canon.judge.mock import MockJudge

from support.helper_modules import load_helper

fake_llm = load_helper("judge/fake_llm_server.py")
TESTS = Path(__file__).resolve().parent
EXAMPLES = TESTS.parent / "examples"

NEEDS_A_MODEL_CALL = {
    "name": "calls-the-model",
    "version": "1",
    "constraints": [{"type": "must_include_steps", "steps": ["ChatCompletion"]}],
}
NEEDS_A_LOOKUP = {
    "name": "looks-up-the-policy",
    "version": "1",
    "constraints": [{"type": "must_include_steps", "steps": ["lookup_policy"]}],
}


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with fake_llm.running_fake_llm() as running:
        running.script("refund", "Refunds take 5 days.")
        yield running


@pytest.fixture(scope="module", autouse=True)
def instrumented() -> Iterator[None]:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument()
    yield
    instrumentor.uninstrument()


def _ask(server: Any, question: str) -> str:
    client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content or ""


def _inputs(captured: canon.TraceCapture) -> list[str]:
    """The user message of each captured model call, in the order the calls ended."""
    return [
        str(dict(span.attributes or {}).get("llm.input_messages.0.message.content"))
        for span in captured.spans
    ]


def _metric(constitution: canon.Constitution, contract: object) -> CoherenceMetric:
    judge = MockJudge(script={"contradict": "no", "__default__": "yes"})
    return CoherenceMetric(constitution=constitution, judge=judge, contract=contract)


def test_the_contract_gate_sees_the_model_calls_made_inside_the_block(server, constitution):
    with capture_trace() as captured:
        answer = _ask(server, "What is the refund policy?")
        _ask(server, "And for a refund abroad?")
    execution = captured.trace
    assert [(step.name, step.kind) for step in execution.steps] == [
        ("ChatCompletion", "model_call"),
        ("ChatCompletion", "model_call"),
    ]
    assert execution.input_text == "What is the refund policy?"
    assert captured.request == "What is the refund policy?"
    assert len(captured.otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]) == 2
    result = _metric(constitution, NEEDS_A_MODEL_CALL).score(answer, trace=captured)
    assert result.canon
    assert [gate.status for gate in result.gates] == ["pass"]


def test_a_missing_step_fails_the_captured_run_before_the_judge(server, constitution):
    metric = _metric(constitution, NEEDS_A_LOOKUP)
    with capture_trace() as captured:
        answer = _ask(server, "What is the refund policy?")
    result = metric.score(Artifact(answer, trace=captured.trace))
    assert result.stopped_by == "contract"
    assert any("lookup_policy" in reason for reason in result.reasons)
    with pytest.raises(AssertionError, match="contract gate failed"):
        metric.assert_coheres(answer, trace=captured)


def test_a_model_call_that_failed_is_a_failed_step(server, constitution):
    server.script("broken", always="500")
    with capture_trace() as captured, pytest.raises(openai.InternalServerError):
        _ask(server, "broken call")
    (span,) = captured.otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert span["status"]["code"] == 2 and span["events"][0]["name"] == "exception"
    result = _metric(constitution, NEEDS_A_MODEL_CALL).score("Sorry.", trace=captured)
    assert result.stopped_by == "contract"


def test_the_request_is_read_from_the_captured_trace_unless_given(server):
    with capture_trace() as captured:
        _ask(server, "What is the refund policy?")
    assert traced_artifact("Five days.", trace=captured).input == "What is the refund policy?"
    assert traced_artifact(Artifact("Five days.", trace=captured)).input == (
        "What is the refund policy?"
    )
    given = traced_artifact("Five days.", input="Refund?", trace=captured)
    assert given.input == "Refund?"
    assert traced_artifact("Five days.").input is None


def test_spans_outside_the_block_are_not_captured(server):
    _ask(server, "before the refund block")
    with capture_trace() as captured:
        _ask(server, "inside the refund block")
    _ask(server, "after the refund block")
    assert len(captured.spans) == 1
    assert captured.request == "inside the refund block"


def test_a_nested_block_keeps_its_own_spans(server):
    with capture_trace() as outer:
        _ask(server, "refund outer")
        with capture_trace() as inner:
            _ask(server, "refund inner")
    assert _inputs(outer) == ["refund outer"]
    assert _inputs(inner) == ["refund inner"]


def test_a_block_that_emits_nothing_is_refused_never_an_empty_pass():
    with capture_trace() as captured:
        pass
    with pytest.raises(TraceError, match=r"holds no spans.*instrumented"):
        _ = captured.trace


def test_concurrent_captures_in_threads_never_mix_spans(server):
    seen: dict[str, list[str]] = {}
    barrier = threading.Barrier(4)

    def run(name: str) -> None:
        with capture_trace() as captured:
            barrier.wait()  # every capture is open before any call is made
            for turn in range(3):
                _ask(server, f"refund {name} {turn}")
        seen[name] = _inputs(captured)

    threads = [threading.Thread(target=run, args=(f"t{index}",)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == ["t0", "t1", "t2", "t3"]
    for name, steps in seen.items():
        assert steps == [f"refund {name} {turn}" for turn in range(3)]


def test_concurrent_captures_in_asyncio_tasks_never_mix_spans(server):
    async def agent(name: str) -> tuple[str, list[str]]:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0)
        with capture_trace() as captured:
            for turn in range(3):
                await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": f"refund {name} {turn}"}]
                )
                await asyncio.sleep(0)
        return name, _inputs(captured)

    async def main() -> list[tuple[str, list[str]]]:
        return await asyncio.gather(*(agent(f"a{index}") for index in range(4)))

    for name, inputs in asyncio.run(main()):
        assert inputs == [f"refund {name} {turn}" for turn in range(3)]


def test_a_thread_that_carries_the_block_context_is_captured(server):
    with capture_trace() as captured:
        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(_ask, server, "refund in a thread"))
        thread.start()
        thread.join()
    assert captured.request == "refund in a thread"


def test_the_provider_in_use_keeps_exporting_the_spans(server):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace_api.get_tracer_provider()
    assert isinstance(provider, TracerProvider)  # the SDK provider in use (or Canon's)
    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    with capture_trace() as captured:
        _ask(server, "refund, exported too")
    assert [span.context.span_id for span in exported.get_finished_spans()] == [
        span.context.span_id for span in captured.spans
    ]


def test_with_no_provider_set_canon_installs_one():
    # a fresh interpreter: the global provider can be set once per process
    script = (
        "from opentelemetry import trace\n"
        "from canon import capture_trace\n"
        "assert type(trace.get_tracer_provider()).__name__ == 'ProxyTracerProvider'\n"
        "tracer = trace.get_tracer('agent')\n"
        "with capture_trace() as captured:\n"
        "    with tracer.start_as_current_span('lookup_policy'):\n"
        "        pass\n"
        "print(type(trace.get_tracer_provider()).__name__, [s.name for s in captured.spans])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["TracerProvider", "['lookup_policy']"]


def test_without_the_sdk_capture_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(UsageError, match=r"canon-testing\[otel\]"), capture_trace():
        pass


def test_a_tracer_provider_that_is_not_the_sdk_s_is_refused(monkeypatch):
    class VendorProvider(trace_api.TracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> trace_api.Tracer:
            return trace_api.NoOpTracer()

    monkeypatch.setattr(trace_api, "get_tracer_provider", VendorProvider)
    refused = pytest.raises(UsageError, match=r"SDK TracerProvider.*VendorProvider")
    with refused, capture_trace():
        pass


def test_the_reporting_metric_keeps_the_captured_run_for_its_events(server, constitution):
    from canon.pytest_plugin.telemetry import EventRecorder, ReportingMetric
    from canon.report.otel_export import trace_links

    recorder = EventRecorder()
    judge = MockJudge(script={"contradict": "no", "__default__": "yes"})
    metric = ReportingMetric(recorder, constitution=constitution, judge=judge)
    with capture_trace() as captured:
        answer = _ask(server, "What is the refund policy?")
    metric.assert_coheres(answer, trace=captured)
    kept = recorder.judged[0].artifact
    assert kept.input == "What is the refund policy?"
    links, notes = trace_links([kept])
    assert notes == []
    assert links[kept.key].trace_id == f"{captured.trace_id:032x}"


def test_capture_trace_is_public():
    assert "capture_trace" in canon.__all__ and canon.capture_trace is capture_trace


PYTEST_TESTS = """
import openai
import pytest
from openinference.instrumentation.openai import OpenAIInstrumentor

from fake_llm_server import running_fake_llm

OpenAIInstrumentor().instrument()


@pytest.fixture(scope="module")
def server():
    with running_fake_llm() as running:
        yield running


@pytest.mark.parametrize("calls", [1, 2, 3, 4])
def test_agent(canon_trace, canon_metric, server, calls):
    client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    for _ in range(calls):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"refund request {calls}"}]
        )
    assert len(canon_trace.trace.steps) == calls
    assert canon_trace.request == f"refund request {calls}"
    canon_metric.assert_coheres("I refunded it under handbook 4.2.", trace=canon_trace)


def test_a_baseline_check_reads_the_trace(canon_trace, canon_baseline, server):
    client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "refund for the baseline"}]
    )
    canon_baseline.check("I refunded it under handbook 4.2.", id="traced", trace=canon_trace)


def test_an_agent_that_made_no_call_is_refused(canon_trace, canon_metric):
    from canon.gates.contracts import TraceError

    with pytest.raises(TraceError, match="holds no spans"):
        canon_metric.assert_coheres("I refunded it.", trace=canon_trace)
"""


@pytest.fixture
def traced_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project whose canon.yaml requires a model call of every traced run."""
    for name in ("constitution.yaml", "judge-script.yaml"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    shutil.copy(TESTS / "judge" / "fake_llm_server.py", pytester.path / "fake_llm_server.py")
    (pytester.path / "contract.yaml").write_text(
        "name: calls-the-model\nversion: '1'\nconstraints:\n"
        "  - type: must_include_steps\n    steps: [ChatCompletion]\n"
    )
    (pytester.path / "canon.yaml").write_text(
        "judge_model: mock:judge-script.yaml\n"
        "constitution_path: constitution.yaml\n"
        "contract: contract.yaml\n"
        "baselines_dir: baselines\n"
    )
    pytester.makepyfile(test_agent=PYTEST_TESTS)
    return pytester


def test_the_canon_trace_fixture_works_under_xdist(traced_project):
    result = traced_project.runpytest_subprocess(
        "-q", "-n", "2", "-p", "no:randomly", "--canon-accept"
    )
    result.assert_outcomes(passed=6)
    # the baseline check read the request from the test's trace, as an input does
    recorded = (traced_project.path / "baselines" / "pytest.json").read_text()
    expected = Artifact("x", input="refund for the baseline").input_digest
    assert f'"input": "{expected}"' in recorded and '"traced"' in recorded

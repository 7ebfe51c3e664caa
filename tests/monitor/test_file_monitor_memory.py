"""What the file monitors remember across a restart: a trace already decided (spans that come
later are recorded ``late``, never judged again) and the day's judge spend (a restarted
monitor cannot spend the day's budget twice)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from canon.check.plan import build_plan
from canon.monitor import monitor_directory
from canon.monitor.judging import LocalBudget, OnlineJudge
from canon.project.config import load_config
from canon.project.contract_files import load_contract_file

from support.cli import copy_example
from support.helper_modules import load_helper
from support.model_judge import PRICED_JUDGE, model_env, model_project
from support.online import spans_of, trace_document, trace_id

fake_llm_server = load_helper("judge/fake_llm_server.py")
CONTRACT = Path(__file__).resolve().parents[2] / "examples" / "contract.yaml"


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def _late_part(ident: str) -> dict[str, Any]:
    """One child span of trace ``ident``, as an exporter that flushed it late writes it."""
    document = trace_document(ident)
    scope = document["resourceSpans"][0]["scopeSpans"][0]
    scope["spans"] = [dict(spans_of(document)[-1], spanId="c000000000000009")]
    return document


def _drop(watch: Path, name: str, document: dict[str, Any]) -> None:
    """Put a trace file into ``watch`` whole (written beside it, then renamed in)."""
    part = watch.parent / f".{name}.part"
    part.write_text(json.dumps(document))
    os.replace(part, watch / name)


def test_a_late_span_file_is_recorded_late_by_a_running_monitor_never_judged_twice(
    tmp_path: Path,
) -> None:
    project = copy_example(tmp_path)
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    ident = trace_id(7)
    _drop(watch, "a.json", trace_document(ident))
    command = [
        sys.executable, "-m", "canon", "contract", "monitor", str(watch),
        "--contract", str(CONTRACT), "--output-dir", str(out), "--settle", "0",
        "--poll-interval", "0.1", "--max-polls", "40", "--judge",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not _records(out) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_records(out)) == 1, "the monitor never decided the first trace"
        _drop(watch, "b.json", _late_part(ident))  # the same trace, after its decision
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert "1 late span(s) recorded, not judged" in stdout  # the session's summary says so
    first, late = sorted(_records(out), key=lambda r: r["decision"]["kind"])
    assert first["decision"]["kind"] == "judged" and first["trace"].endswith("a.json")
    assert late["decision"]["kind"] == "late" and late["trace"].endswith("b.json")
    assert late["trace_id"] == ident and "verdict" not in late  # no contract, no judge
    assert "b.json came after the trace was decided" in late["decision"]["cause"]
    # a restart reads neither file again, and a later late file is known late from the records
    _drop(watch, "c.json", _late_part(ident))
    plan = build_plan(load_config(cwd=project))
    stats = monitor_directory(
        load_contract_file(str(CONTRACT)), watch, output_dir=out, settle=0, max_polls=1,
        sleep=lambda _: None, judge=OnlineJudge(plan),
    )  # fmt: skip
    assert (stats.validated, stats.late) == (0, 1)
    kinds = sorted(r["decision"]["kind"] for r in _records(out))
    assert kinds == ["judged", "late", "late"]


def test_without_a_judge_a_later_file_of_a_trace_is_validated_as_before(tmp_path: Path) -> None:
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    ident = trace_id(8)
    _drop(watch, "a.json", trace_document(ident))
    _drop(watch, "b.json", trace_document(ident))
    contract = load_contract_file(str(CONTRACT))
    stats = monitor_directory(
        contract, watch, output_dir=out, settle=0, max_polls=1, sleep=lambda _: None
    )
    assert (stats.validated, stats.late) == (2, 0)
    assert all("decision" not in r for r in _records(out))


def test_a_restarted_monitor_does_not_spend_the_days_budget_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = model_project(tmp_path, PRICED_JUDGE + "judge_cache: false\nthreshold: 0.5\n")
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    contract = load_contract_file(str(CONTRACT))
    limit = 0.00002
    with fake_llm_server.running_fake_llm() as fake:
        fake.script("", "ANSWER: yes")
        for name, value in model_env(fake.base_url).items():
            monkeypatch.setenv(name, value)
        plan = build_plan(load_config(cwd=project))

        def run(first: int) -> None:  # a new process: a new budget, the same output dir
            for n in range(first, first + 6):
                _drop(watch, f"t{n:02}.json", trace_document(trace_id(n)))
            judge = OnlineJudge(plan, budget=LocalBudget(limit))
            monitor_directory(
                contract, watch, output_dir=out, settle=0, max_polls=1,
                sleep=lambda _: None, judge=judge,
            )  # fmt: skip

        run(0)
        calls = len(fake.requests)
        judged = [r["decision"] for r in _records(out) if r["decision"]["kind"] == "judged"]
        assert judged and calls
        run(6)  # restarted the same UTC day, with six more sampled traces
        assert len(fake.requests) == calls, "the restarted monitor asked the judge again"
    decisions = [r["decision"] for r in _records(out)]
    assert len(decisions) == 12
    assert [d for d in decisions if d["kind"] == "judged"] == judged
    spent = sum(d.get("cost", 0.0) for d in decisions)
    assert spent <= limit + max(d["cost"] for d in judged)


def test_a_damaged_decision_in_the_output_directory_stops_the_monitor_naming_it(
    tmp_path: Path,
) -> None:
    project = copy_example(tmp_path)
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    out.mkdir()
    bad = out / "t.json"
    bad.write_text(json.dumps({"monitor_key": "file:x", "decision": {"kind": "judged"}}))
    result = subprocess.run(
        [
            sys.executable, "-m", "canon", "contract", "monitor", str(watch), "--contract",
            str(CONTRACT), "--output-dir", str(out), "--max-polls", "1", "--judge",
        ],
        cwd=project, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert str(bad) in result.stderr and "trace_id" in result.stderr

"""Judging in the directory monitor: decisions in the records, sampling, budget, failures,
verdict events parented to the trace, and the CLI's options."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from canon.check.plan import build_plan
from canon.core.online import sampled
from canon.monitor import monitor_directory
from canon.monitor.judging import LocalBudget, OnlineJudge
from canon.project.config import load_config
from canon.project.contract_files import load_contract_file

from support.cli import copy_example, run_canon
from support.helper_modules import load_helper
from support.model_judge import PRICED_JUDGE, model_env, model_project
from support.online import trace_document, trace_id

fake_llm_server = load_helper("judge/fake_llm_server.py")
otlp_receiver = load_helper("report/otlp_receiver.py")
CONTRACT = Path(__file__).resolve().parents[2] / "examples" / "contract.yaml"


def _records(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(out.glob("*.json")):
        data = json.loads(path.read_text())
        found[data["trace_id"]] = data
    return found


def _watch(tmp_path: Path, count: int, **kinds: Any) -> tuple[Path, list[str]]:
    watch = tmp_path / "in"
    watch.mkdir()
    ids = [trace_id(n) for n in range(count)]
    for n, ident in enumerate(ids):
        document = trace_document(ident, skip_lookup=n in kinds.get("failing", ()))
        (watch / f"t{n}.json").write_text(json.dumps(document))
    return watch, ids


def _monitor(watch: Path, out: Path, judge: OnlineJudge, **options: Any) -> Any:
    return monitor_directory(
        load_contract_file(str(CONTRACT)),
        watch,
        output_dir=out,
        settle=0,
        max_polls=1,
        sleep=lambda _: None,
        judge=judge,
        **options,
    )


def test_each_trace_gets_a_decision_and_a_failed_contract_is_never_judged(tmp_path: Path) -> None:
    project = copy_example(tmp_path)
    plan = build_plan(load_config(cwd=project))
    watch, ids = _watch(tmp_path, 3, failing=(1,))
    out = tmp_path / "out"
    _monitor(watch, out, OnlineJudge(plan, rate=1.0))
    records = _records(out)
    assert records[ids[0]]["decision"]["kind"] == "judged"
    assert records[ids[0]]["decision"]["verdict"] == "canon"
    assert records[ids[0]]["decision"]["principles"] == {f"P{n}": True for n in range(1, 5)}
    assert records[ids[1]]["verdict"]["status"] == "fail"
    assert records[ids[1]]["decision"]["kind"] == "gate-failed"
    assert "contract" in records[ids[1]]["decision"]["cause"]
    # a restart finds every trace decided: nothing is judged again
    _monitor(watch, out, OnlineJudge(plan, rate=1.0))
    assert _records(out) == records


def test_the_sample_picks_the_same_traces_as_the_hash_says(tmp_path: Path) -> None:
    project = copy_example(tmp_path)
    plan = build_plan(load_config(cwd=project))
    watch, ids = _watch(tmp_path, 12)
    out = tmp_path / "out"
    _monitor(watch, out, OnlineJudge(plan, rate=0.5, salt="s"))
    kinds = {i: r["decision"]["kind"] for i, r in _records(out).items()}
    assert {i for i, k in kinds.items() if k == "judged"} == {
        i for i in ids if sampled(i, 0.5, "s")
    }
    assert set(kinds.values()) == {"judged", "sampled-out"}


def _priced_project(tmp_path: Path) -> Path:
    return model_project(tmp_path, PRICED_JUDGE + "judge_cache: false\nthreshold: 0.5\n")


def test_the_budget_drops_what_it_cannot_pay_for_and_is_crossed_by_one_trace_at_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_llm_server.running_fake_llm() as fake:
        fake.script("contradict any part", "ANSWER: no")
        fake.script("surface the tradeoff", "ANSWER: n/a")
        fake.script("", "ANSWER: yes")
        for name, value in model_env(fake.base_url).items():
            monkeypatch.setenv(name, value)
        plan = build_plan(load_config(cwd=_priced_project(tmp_path)))
        watch, _ = _watch(tmp_path, 6)
        out = tmp_path / "out"
        budget = LocalBudget(0.00002)
        _monitor(watch, out, OnlineJudge(plan, budget=budget))
    sent = [json.dumps(r["messages"]) for r in fake.requests]
    # the trace's request and answer are what the judge was shown
    assert all("charged twice for March" in s and "19.99 EUR" in s for s in sent)
    decisions = [r["decision"] for r in _records(out).values()]
    judged = [d for d in decisions if d["kind"] == "judged"]
    dropped = [d for d in decisions if d["kind"] == "budget-dropped"]
    assert judged and dropped and len(judged) + len(dropped) == 6
    one = max(d["cost"] for d in judged)
    assert budget.spent == pytest.approx(sum(d["cost"] for d in judged))
    assert budget.spent <= 0.00002 + one
    assert all("verdict" not in d for d in dropped)


def test_a_failing_judge_leaves_the_trace_unscored_with_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = model_project(
        tmp_path,
        PRICED_JUDGE + "judge_cache: false\njudge_options:\n  max_attempts: 1\n",
    )
    with fake_llm_server.running_fake_llm() as fake:
        fake.script("", always="503")
        for name, value in model_env(fake.base_url).items():
            monkeypatch.setenv(name, value)
        plan = build_plan(load_config(cwd=project))
        watch, ids = _watch(tmp_path, 1)
        out = tmp_path / "out"
        _monitor(watch, out, OnlineJudge(plan))
    decision = _records(out)[ids[0]]["decision"]
    assert decision["kind"] == "unscored"
    assert "verdict" not in decision and "503" in decision["cause"]


def test_the_cli_judges_and_sends_verdict_events_parented_to_the_trace(tmp_path: Path) -> None:
    project = copy_example(tmp_path)
    watch, ids = _watch(tmp_path, 2)
    out = tmp_path / "out"
    with otlp_receiver.running_receiver() as received:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": received.endpoint}
        result = run_canon(
            project, "contract", "monitor", str(watch), "--contract", str(CONTRACT),
            "--output-dir", str(out), "--settle", "0", "--max-polls", "1",
            "--judge", "--otel",
            env=env,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        verdicts = received.named("canon.verdict")
    assert {v["trace_id"] for v in verdicts} == set(ids)
    assert all(v["span_id"] == "a000000000000001" for v in verdicts)  # the root span
    assert {r["decision"]["kind"] for r in _records(out).values()} == {"judged"}


@pytest.mark.parametrize("option", [["--sample", "0.5"], ["--budget", "1"]])
def test_a_judging_option_without_judge_is_refused(tmp_path: Path, option: list[str]) -> None:
    watch, _ = _watch(tmp_path, 1)
    result = run_canon(
        tmp_path, "contract", "monitor", str(watch), "--contract", str(CONTRACT),
        "--output-dir", str(tmp_path / "out"), "--max-polls", "1", *option,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"{option[0]} goes with --judge" in result.stderr

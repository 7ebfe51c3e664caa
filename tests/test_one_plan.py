"""One plan and one baseline store (issue 22): what each door used to get wrong on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from canon.check.metric import CoherenceMetric
from canon.check.plan import build_plan
from canon.check.spend import BudgetJudge, Ledger, estimate_run, model_judge
from canon.core.baseline import BASELINE_FORMAT
from canon.errors import BaselineError, BudgetExceededError
from canon.judge.cache import CachingJudge
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.mock import MockJudge
from canon.project.baselines import read_baseline, write_baseline_data
from canon.project.config import load_config
from canon.project.store import BASELINE_LIMIT
from canon.project.suite import read_suite

from support.cli import copy_example, invoke_in

PLAIN_VIOLATION = (
    'serve the mission: "yes"\n'
    'surface the tradeoff: "n/a"\n'
    'contradict any part: "no"\n'
    # P2 (hand large refunds to a person) plainly violated; every other question holds
    'Hand any refund: "no"\n'
    '__default__: "yes"\n'
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = copy_example(tmp_path)
    monkeypatch.chdir(target)  # relative paths in canon.yaml are relative to where Canon runs
    return target


def test_the_progress_line_gives_the_settled_verdict_not_the_first_draft(project):
    # One "no" among many "yes" keeps the score above the threshold, so the first pass reads
    # canon; the plain-violation rule (after confirmation) makes it non-canon.
    (project / "judge-script.yaml").write_text(PLAIN_VIOLATION)
    result = invoke_in(project, "score", "--format", "json")
    document = json.loads(result.stdout)
    verdicts = {a["key"]: a["canon"] for a in document["artifacts"]}
    assert verdicts["duplicate-charge"] is False
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 3
    for line in progress:
        key = line.split()[1]
        word = "canon" if verdicts[key] else "NON-CANON"
        assert line.split()[2] == word, line


def test_accept_says_which_cells_it_looked_at_twice(project):
    result = invoke_in(project, "accept")
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("confirmation:")]
    reasks = int(line.split()[1])
    cells = int(line.split(" on ")[1].split()[0])
    assert reasks > 0 and cells == reasks  # every answer asked twice, none left out


def test_from_config_builds_what_canon_score_builds(project, monkeypatch):
    config_file = project / "canon.yaml"
    config_file.write_text(
        config_file.read_text()
        + "concurrency: 3\nflip_rate: 0.25\nconfirm_judge: mock:judge-script.yaml\n"
    )
    metric = CoherenceMetric.from_config()
    plan = build_plan(load_config(config_file))
    assert metric.plan.concurrency == plan.concurrency == 3
    assert metric.rule.flip_rate == plan.rule.flip_rate == 0.25
    assert isinstance(metric.plan.confirm_judge, MockJudge)
    assert [g.__name__ for g in metric.plan.gates] == [g.__name__ for g in plan.gates]


def test_max_cost_holds_both_judges_to_one_budget(project, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    (project / "canon.yaml").write_text(
        "judge_model: openai:gpt-4o-mini\nconfirm_judge: openai:gpt-4o\n"
        "constitution_path: constitution.yaml\nsuite: suite.yaml\nmax_cost: 1\n"
    )
    plan = build_plan(load_config(project / "canon.yaml"))
    first, second = plan.judge, plan.confirm_judge
    assert isinstance(first, CachingJudge) and isinstance(second, CachingJudge)
    guards = [first.inner, second.inner]
    assert all(isinstance(g, BudgetJudge) for g in guards)
    one, two = guards
    assert isinstance(one, BudgetJudge) and isinstance(two, BudgetJudge)
    assert one.ledger is two.ledger  # what the first spends, the second cannot
    one.book(one.reserve("openai/gpt-4o-mini", [{"role": "user", "content": "hi"}], 1), None)
    one.ledger.spent = 0.999999
    with pytest.raises(BudgetExceededError, match="max_cost"):
        two.reserve("openai/gpt-4o", [{"role": "user", "content": "x " * 200}], 1)


def test_an_estimate_counts_the_gate_look_a_constitution_change_brings(project):
    assert invoke_in(project, "accept").exit_code == 0
    config = load_config(project / "canon.yaml")
    assert config.suite is not None
    artifacts = read_suite(config.suite)
    before = _estimate(project, artifacts)
    constitution = project / "constitution.yaml"
    constitution.write_text(constitution.read_text().replace("quickly, accurately", "accurately"))
    after = _estimate(project, artifacts)
    # Under another constitution no text is unchanged: every judged artifact's gate
    # question gets its second look, as the run gives it (the example's baseline needed no
    # re-asks, its scripted judge being consistent).
    assert after.questions - before.questions == len(artifacts) - after.stopped > 0


def _estimate(project: Path, artifacts):  # type: ignore[no-untyped-def]
    config = load_config(project / "canon.yaml")
    plan = build_plan(config)
    baseline = read_baseline(project / "baselines" / "suite.json")
    return estimate_run(plan, artifacts, baseline=baseline)


def test_a_baseline_written_by_a_newer_canon_is_read_as_such_and_never_overwritten(project):
    assert invoke_in(project, "accept").exit_code == 0
    path = project / "baselines" / "suite.json"
    data = json.loads(path.read_text())
    data["format"] = BASELINE_FORMAT + 1
    path.write_text(json.dumps(data))
    check = invoke_in(project, "check")
    assert check.exit_code == 2
    assert "newer Canon" in check.stderr and "upgrade canon-testing" in check.stderr
    assert "canon accept" not in check.stderr.replace("do not re-accept", "")
    accept = invoke_in(project, "accept")
    assert accept.exit_code == 2
    assert "newer Canon" in accept.stderr and "not replaced" in accept.stderr
    assert json.loads(path.read_text())["format"] == BASELINE_FORMAT + 1  # untouched


def test_the_store_refuses_a_document_that_would_not_load(tmp_path):
    path = tmp_path / "b.json"
    with pytest.raises(BaselineError, match="missing key"):
        write_baseline_data(path, {"format": 4, "artifacts": {}})
    assert not path.exists()


def test_the_store_reads_up_to_its_limit_for_every_door(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (BASELINE_LIMIT + 1))
    with pytest.raises(BaselineError, match="64 MiB"):
        read_baseline(path)


def test_a_scripted_judge_is_never_wrapped_in_a_budget(project):
    config_file = project / "canon.yaml"
    config_file.write_text(config_file.read_text() + "max_cost: 0.01\n")
    plan = build_plan(load_config(config_file))
    assert model_judge(plan.judge) is None
    assert not isinstance(plan.judge, BudgetJudge)


def test_a_ledger_books_a_prepaid_batch() -> None:
    guard = BudgetJudge(LiteLLMJudge("openai/gpt-4o-mini", api_key="sk-x"), Ledger(1.0, "c"))
    guard.prepaid(0.25)
    assert guard.spent == 0.25 and guard.max_cost == 1.0

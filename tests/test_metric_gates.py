"""The deterministic gates in front of the judge, as CoherenceMetric and canon score run them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon import Artifact, CoherenceMetric
from canon.cli import main
from canon.errors import GateError
from canon.judge.mock import MockJudge

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "tests" / "corpus" / "traces" / "abc-examples"

POLICY = {
    "schema_version": "1.0",
    "policy_id": "refund-reply",
    "rules": [
        {"rule_id": "has-decision", "kind": "required_field", "path": "decision"},
        {"rule_id": "not-blocked", "kind": "false", "path": "blocked"},
    ],
}


def _judge() -> MockJudge:
    return MockJudge(script={"contradict": "no", "__default__": "yes"})


def test_a_failing_policy_stops_the_artifact_before_any_judge_call(constitution):
    judge = _judge()
    metric = CoherenceMetric(constitution=constitution, judge=judge, policy=POLICY)
    result = metric.score(Artifact("Refunded.", response={"blocked": True}))
    assert not result.canon
    assert result.stopped_by == "policy"
    assert judge.calls == 0
    assert "rule 'has-decision' FIELD_MISSING" in result.reasons[0]
    assert "rule 'not-blocked' VALUE_NOT_FALSE" in result.reasons[0]
    with pytest.raises(AssertionError, match="policy gate failed"):
        metric.assert_coheres(Artifact("Refunded.", response={"blocked": True}))


def test_a_passing_policy_lets_the_judge_decide(constitution):
    judge = _judge()
    metric = CoherenceMetric(constitution=constitution, judge=judge, policy=POLICY)
    result = metric.score(Artifact("Refunded.", response={"decision": "refund", "blocked": False}))
    assert result.canon and judge.calls > 0
    assert [g.status for g in result.gates] == ["pass"]


def test_a_response_that_is_not_json_fails_the_policy_gate(constitution):
    metric = CoherenceMetric(constitution=constitution, judge=_judge(), policy=POLICY)
    result = metric.score(Artifact("Refunded.", response='{"decision": 1, "decision": 2}'))
    assert result.stopped_by == "policy"


def test_an_artifact_without_a_response_is_noted_as_skipped_not_silently_passed(constitution):
    metric = CoherenceMetric(constitution=constitution, judge=_judge(), policy=POLICY)
    result = metric.score("Refunded.")
    assert result.canon
    assert result.notes == ("policy gate skipped: the artifact has no structured response",)


def test_a_policy_file_is_read_strictly(constitution, tmp_path):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(POLICY))
    metric = CoherenceMetric(constitution=constitution, judge=_judge(), policy=str(path))
    assert metric.score(Artifact("x", response={"blocked": False})).stopped_by == "policy"
    path.write_text('{"schema_version": "2.0"}')
    with pytest.raises(GateError):
        CoherenceMetric(constitution=constitution, judge=_judge(), policy=path)
    with pytest.raises(GateError, match=r"policy file not found at .*none\.json"):
        CoherenceMetric(constitution=constitution, judge=_judge(), policy=tmp_path / "none.json")
    with pytest.raises(GateError, match="got a int"):
        CoherenceMetric(constitution=constitution, judge=_judge(), policy=3)


def test_a_failing_contract_stops_the_artifact_before_any_judge_call(constitution):
    judge = _judge()
    metric = CoherenceMetric(
        constitution=constitution, judge=judge, contract="claims-processing-v1"
    )
    result = metric.score(Artifact("Denied.", trace=TRACES / "invalid_claim.json"))
    assert result.stopped_by == "contract" and judge.calls == 0
    assert any("must_include_steps" in reason for reason in result.reasons)


def test_a_passing_contract_lets_the_judge_decide(constitution):
    judge = _judge()
    metric = CoherenceMetric(
        constitution=constitution, judge=judge, contract="claims-processing-v1"
    )
    trace = json.loads((TRACES / "valid_claim.json").read_text())
    result = metric.score(Artifact("Approved per Section 4.2.", trace=trace))
    assert result.canon and judge.calls > 0


def test_a_contract_warning_becomes_a_note(constitution, tmp_path):
    contract = {
        "name": "soft",
        "version": "1",
        "constraints": [
            {"type": "must_include_steps", "steps": ["never_ran"], "severity": "warning"}
        ],
    }
    metric = CoherenceMetric(constitution=constitution, judge=_judge(), contract=contract)
    result = metric.score(Artifact("Approved.", trace=TRACES / "valid_claim.json"))
    assert result.canon
    assert result.notes[0].startswith("contract gate warning:")


@pytest.fixture
def gated_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example project with a policy, a contract and a three-artifact suite; cwd is it."""
    project = tmp_path / "p"
    shutil.copytree(REPO / "examples", project)
    (project / "policy.json").write_text(json.dumps(POLICY))
    shutil.copy(TRACES / "invalid_claim.json", project / "trace.json")
    (project / "suite.yaml").write_text(
        "artifacts:\n"
        "  - id: ok\n    text: Fine.\n    response: {decision: refund, blocked: false}\n"
        "  - id: blocked\n    text: Blocked.\n    response: {blocked: true}\n"
        "  - id: bad-process\n    text: Denied.\n    trace: trace.json\n"
    )
    (project / "canon.yaml").write_text(
        "judge_model: mock:judge-script.yaml\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\npolicy: policy.json\ncontract: claims-processing-v1\n"
        "baselines_dir: baselines\n"
    )
    monkeypatch.chdir(project)
    return project


def test_score_cli_runs_the_configured_gates(gated_project):
    result = CliRunner().invoke(main, ["score", "--format", "json", "--quiet"])
    assert result.exit_code == 1, result.output
    records = {a["key"]: a for a in json.loads(result.stdout)["artifacts"]}
    assert records["ok"]["canon"] is True
    assert records["blocked"]["stopped_by"] == "policy"
    assert records["bad-process"]["stopped_by"] == "contract"
    assert records["bad-process"]["questions"] == {}  # no judge call was spent on it


def test_the_baseline_records_which_gate_stopped_an_artifact(gated_project):
    result = CliRunner().invoke(main, ["accept", "--quiet"])
    assert result.exit_code == 0, result.output
    recorded = json.loads((gated_project / "baselines" / "suite.json").read_text())["artifacts"]
    assert recorded["ok"]["stopped_by"] is None
    assert recorded["blocked"]["stopped_by"] == "policy"
    assert recorded["bad-process"]["stopped_by"] == "contract"
    assert recorded["blocked"]["questions"] == {}  # no judge call was spent on it

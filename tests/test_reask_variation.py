"""Re-asks vary what matters: the wording, the choice order, and optionally the judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from canon.check.confirm import confirm
from canon.check.runner import ScoringPlan, score_artifacts
from canon.check.variants import describe_variant
from canon.core.artifact import Artifact
from canon.core.constitution import Constitution, Principle
from canon.core.evidence import DecisionRule
from canon.core.prompt import render_prompt
from canon.core.scoring import Answer
from canon.judge.base import JudgeRequest
from canon.judge.sync import run_sync
from canon.project.store import load_rubric

from support.cli import copy_example
from support.cli import invoke_quietly as _canon

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RUBRIC = load_rubric()
CONSTITUTION = Constitution("Serve customers.", (Principle("Be honest."),))


class WordingJudge:
    """Says the gate is contradicted only when asked in the rubric's own wording."""

    name = "wording"

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[str, ...]]] = []

    async def answer(self, request: JudgeRequest) -> Answer:
        question = request.question
        prompt = render_prompt(
            question,
            request.artifact.text,
            request.constitution,
            request.instructions,
            request.variant,
        )
        asked = prompt.user.split("QUESTION\n")[1].split("\n")[0]
        order = prompt.user.split("CHOICES\n")[1].split("\n\n")[0]
        if question.kind == "gate":
            self.seen.append((asked, tuple(line[2:4] for line in order.splitlines())))
            return Answer({"yes" if asked == question.text else "no": 1.0})
        return Answer({"yes": 1.0})


def test_reasks_of_the_gate_use_every_wording_and_both_choice_orders():
    judge = WordingJudge()
    plan = ScoringPlan(CONSTITUTION, RUBRIC, judge, 0.5)
    artifact = Artifact("A reply.", id="a")
    first = run_sync(score_artifacts(plan, [artifact]))
    found = run_sync(confirm(plan, [artifact], first, DecisionRule()))
    # The misreading belonged to one wording: the other wordings clear it.
    assert found.results[0].canon
    wordings = {asked for asked, _ in judge.seen}
    assert len(wordings) == 3
    orders = [order for _, order in judge.seen]
    assert orders[0] != orders[1] and len(set(orders)) == 2


def test_a_variant_is_described_by_its_wording_order_and_judge():
    gate = RUBRIC.gate
    assert describe_variant(gate, 1) == "re-ask 1: wording 2 of 3, choices no/yes"
    assert describe_variant(gate, 2, "mock:b.yaml") == (
        "re-ask 2: wording 3 of 3, choices yes/no, judge mock:b.yaml"
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = copy_example(tmp_path)
    assert _canon(target, "accept").exit_code == 0
    # the agent's replies changed (an identical text cannot regress on the judge alone) ...
    suite = target / "suite.yaml"
    suite.write_text(suite.read_text().replace("    text: >-\n", "    text: >-\n      Reworded:\n"))
    # ... and the first judge now reads P2 as violated everywhere
    script = target / "judge-script.yaml"
    script.write_text('refund above 200: "no"\n' + script.read_text(), encoding="utf-8")
    return target


def test_a_second_judge_that_disagrees_clears_the_first_judges_flip(project):
    shutil.copy(EXAMPLES / "judge-script.yaml", project / "second.yaml")
    config = project / "canon.yaml"
    # a tolerance Layer 2's drop stays within: this test is about the flips
    text = config.read_text(encoding="utf-8").replace("tolerance: 0.02", "tolerance: 0.1")
    config.write_text(text + "confirm_judge: mock:second.yaml\n", encoding="utf-8")
    result = _canon(project, "check")
    assert result.exit_code == 0, result.output
    assert "judge noise (not repeated on re-ask)" in result.stdout


def test_a_flip_the_second_judge_repeats_is_confirmed_and_says_which_variations(project):
    shutil.copy(project / "judge-script.yaml", project / "second.yaml")
    with (project / "canon.yaml").open("a", encoding="utf-8") as config:
        config.write("confirm_judge: mock:second.yaml\n")
    result = _canon(project, "check")
    assert result.exit_code == 1, result.output
    assert "confirmed by" in result.stdout
    assert "re-ask 1: wording 2 of 3, choices n/a/no/partly/yes, judge mock:second.yaml" in (
        result.stdout
    )
    document = json.loads(_canon(project, "check", "--format", "json").stdout)
    flip = document["flips"][0]
    assert flip["confirmed_by"][0].startswith("re-ask 1: wording 2 of 3")


def test_a_confirm_judge_that_cannot_be_built_is_exit_2_naming_the_file(project):
    with (project / "canon.yaml").open("a", encoding="utf-8") as config:
        config.write("confirm_judge: mock:missing.yaml\n")
    result = _canon(project, "check")
    assert result.exit_code == 2
    assert "canon.yaml: confirm_judge:" in result.stderr and "missing.yaml" in result.stderr


def test_a_baseline_recorded_under_rubric_1_0_0_asks_to_be_reaccepted(tmp_path):
    target = copy_example(tmp_path)
    assert _canon(target, "accept").exit_code == 0
    path = target / "baselines" / "suite.json"
    data = json.loads(path.read_text())
    data["rubric"] = {"id": "cdt", "version": "1.0.0", "fingerprint": "4603ef5595b118a0"}
    path.write_text(json.dumps(data), encoding="utf-8")
    result = _canon(target, "check")
    assert result.exit_code == 2
    assert "rubric cdt 1.0.0, this Canon uses cdt 1.1.0" in result.stderr
    assert 'run "canon accept" again' in result.stderr

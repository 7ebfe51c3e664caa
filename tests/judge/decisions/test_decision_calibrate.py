"""calibrate with a decision judge asks one call per artifact, finds what asking one
question per call finds, and fails closed when a call or an answer fails (the CLI's counts
at the servers are in test_decision_cli.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from canon.check.calibrate import ask_sample, calibration_cells, sent_requests
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.scoring import Answer
from canon.errors import ExitCode
from canon.judge.base import JudgeRequest, ResponseAnswers
from canon.judge.decisions.judge import DecisionJudge
from canon.project.store import load_rubric

from support.cli import copy_example, run_canon
from support.helper_modules import load_helper
from support.network import without_otel

decision_server = load_helper("judge/decisions/decision_server.py")
helpers = load_helper("judge/decisions/decision_helpers.py")

RUBRIC = load_rubric()


class OneAtATime:
    """The decision judge asked one question per call (``answer`` only): how calibrate asked
    it before it asked one call per artifact."""

    deterministic = True

    def __init__(self, inner: DecisionJudge) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    async def answer(self, request: JudgeRequest) -> Answer:
        return await self.inner.answer(request)


def test_one_call_per_artifact_finds_what_one_call_per_question_finds() -> None:
    artifacts = [Artifact(f"I refunded {i}9.99 EUR twice.", id=f"a{i}") for i in range(3)]
    with decision_server.running() as running:
        judge = DecisionJudge("typesafe", "jev-1.13.0", api_key="k", api_base=running.url)
        plan = ScoringPlan(helpers.CONSTITUTION, RUBRIC, judge, 0.5)
        sample = calibration_cells(plan, artifacts, cells=6, repeats=3, seed=4)
        grouped = asyncio.run(ask_sample(plan, sample))
        calls = len({cell.artifact.key for cell in sample})
        assert 1 < calls == len(running.requests)
        firsts = list(running.requests)
        alone = dataclasses.replace(plan, judge=OneAtATime(judge))
        single = asyncio.run(ask_sample(alone, sample))
        # each cell's requests, one per call (the first wording asked once more for orders)
        assert len(running.requests) - calls == sum(len(cell.requests) for cell in sample)
        assert len(sent_requests(plan, sample)) == sum(len(b["questions"]) for b in firsts)
    assert grouped.paraphrase == single.paraphrase and grouped.paraphrase
    assert grouped.order == single.order and grouped.order
    assert grouped.by_kind == single.by_kind == {}
    assert grouped.failed == single.failed == 0
    # any deterministic judge (an LLM at temperature 0 too) is re-asked nothing
    assert all(not cell.repeats for cell in calibration_cells(alone, artifacts, cells=5, seed=4))
    assert single.deterministic and single.recommended_flip_rate is None


class Sampling(OneAtATime):
    """The decision judge as if it sampled afresh (not deterministic): its re-asks count."""

    deterministic = False

    async def answer_all(self, requests: Sequence[JudgeRequest]) -> ResponseAnswers:
        return await self.inner.answer_all(requests)


def test_a_whole_response_judge_that_samples_is_also_re_asked_a_question_at_a_time() -> None:
    artifacts = [Artifact(f"I refunded {i}9.99 EUR twice.", id=f"a{i}") for i in range(3)]
    with decision_server.running() as running:
        judge = DecisionJudge("typesafe", "jev-1.13.0", api_key="k", api_base=running.url)
        plan = ScoringPlan(helpers.CONSTITUTION, RUBRIC, Sampling(judge), 0.5)
        sample = calibration_cells(plan, artifacts, cells=6, repeats=3, seed=1)
        found = asyncio.run(ask_sample(plan, sample))
        # one call per artifact for the wordings and orders, one per re-ask
        calls = len({cell.artifact.key for cell in sample}) + 3 * len(sample)
        assert len(running.requests) == calls
    assert not found.deterministic and found.recommended_flip_rate is not None
    assert sum(t.answers for t in found.by_kind.values()) == 3 * len(sample)
    assert found.paraphrase and found.order and found.failed == 0


def _project(root: Path, url: str) -> tuple[Path, dict[str, str]]:
    where = copy_example(root)
    (where / "canon.yaml").write_text(
        "judge_model: typesafe:jev-1.13.0\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\njudge_cache: false\njudge_options:\n  max_attempts: 1\n"
    )
    return where, without_otel(TYPESAFE_BASE_URL=url, TYPESAFE_API_KEY="k")


def test_a_call_that_fails_leaves_all_its_answers_out_and_exits_3(tmp_path: Path) -> None:
    with decision_server.running(decision_server.DecisionServer(always="503")) as running:
        where, env = _project(tmp_path, running.url)
        found = run_canon(where, "calibrate", "--cells", "4", "--format", "json", env=env)
    assert found.returncode == ExitCode.JUDGE_UNAVAILABLE, found.stderr
    assert "unavailable for" in found.stderr and "503" in found.stderr
    document = json.loads(found.stdout)
    calls = len(running.requests)
    assert calls >= 1 and document["unavailable_answers"] == document["failed_answers"] > 0
    assert document["paraphrase_stability"] == {} == document["order_stability"]


def _drop_one(body: dict[str, Any]) -> dict[str, Any]:
    """Leave out the answer to the first question's first wording."""
    body["answers"].pop(sorted(body["answers"])[0])
    return body


def test_a_missing_answer_is_left_out_never_counted(tmp_path: Path) -> None:
    with decision_server.running(decision_server.DecisionServer(tamper=_drop_one)) as running:
        where, env = _project(tmp_path, running.url)
        found = run_canon(where, "calibrate", "--cells", "4", "--format", "json", env=env)
        calls = len(running.requests)
    assert found.returncode == ExitCode.OK, found.stderr
    document = json.loads(found.stdout)
    # each call lost one answer (a question's wording or order), nothing else
    assert 0 < document["failed_answers"] <= 2 * calls and document["unavailable_answers"] == 0
    asked = sum(t["answers"] for t in document["paraphrase_stability"].values())
    assert 0 < asked < 4 * 3


@pytest.mark.parametrize("budget", ["", "max_cost: 5\n"])
def test_an_llm_at_temperature_0_is_deterministic_too_under_a_budget(
    tmp_path: Path, fake_llm: Any, budget: str
) -> None:
    fake_llm.script("", "ANSWER: yes")
    where = copy_example(tmp_path)
    (where / "canon.yaml").write_text(
        "judge_model: openai:gpt-4o-mini\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\njudge_cache: false\n"
        f"judge_options:\n  temperature: 0\n  reask_temperature: 0\n{budget}"
    )
    env = without_otel(OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY="sk-test")
    found = run_canon(where, "calibrate", "--cells", "2", "--format", "json", env=env)
    assert found.returncode == ExitCode.OK, found.stderr
    document = json.loads(found.stdout)
    assert document["deterministic"] is True and document["recommended_flip_rate"] is None
    # no re-ask: each cell in its three wordings and its choice orders (one is the same ask)
    assert document["by_kind"] == {} and len(fake_llm.requests) == document["usage"]["calls"]

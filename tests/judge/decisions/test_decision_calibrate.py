"""calibrate with a decision judge asks one call per artifact, and finds what asking one
question per call finds (the CLI's counts at the servers are in test_decision_cli.py)."""

from __future__ import annotations

import asyncio
import dataclasses

from canon.check.calibrate import ask_sample, calibration_cells, sent_requests
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.scoring import Answer
from canon.judge.base import JudgeRequest
from canon.judge.decisions.judge import DecisionJudge
from canon.project.store import load_rubric

from support.helper_modules import load_helper

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
        sample = calibration_cells(plan, artifacts, cells=10, repeats=3, seed=4)
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

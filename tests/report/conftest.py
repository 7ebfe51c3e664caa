"""Scored runs for the report tests: real scoring with a scripted judge and a fake gate."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from canon.check.runner import ScoringPlan, score_artifacts
from canon.core.artifact import Artifact
from canon.core.baseline import baseline_from_results
from canon.core.compare import Comparison, gate
from canon.core.constitution import Constitution
from canon.core.evidence import DecisionRule, add_answer, failed_reask, open_evidence
from canon.core.gate_outcome import GateOutcome
from canon.core.rubric import Question
from canon.core.scoring import Answer, ArtifactResult
from canon.errors import JudgeUnavailableError
from canon.judge.base import JudgeRequest
from canon.judge.mock import MockJudge
from canon.project.store import load_rubric

from support.helper_modules import load_helper

# Everything a report must carry as inert text: markup, a CDATA terminator, both quote
# kinds, an ampersand, and a control character XML 1.0 cannot express.
HOSTILE = "<script>window.canonPwned = 1; alert(1)</script> ]]> \"dq\" 'sq' & \x01 end"

ARTIFACTS = {
    "fine": Artifact("All good, refunded 10 EUR.", id="fine"),
    "contradicts": Artifact("CONTRADICTS the mission.", id="contradicts"),
    "weak": Artifact("WEAK answer.", id="weak"),
    "judge-down": Artifact("DOWN: the judge fails on this one.", id="judge-down"),
    "hostile": Artifact("HOSTILE gate stops this.", id=HOSTILE),
}


def scripted(question: Question, text: str) -> str:
    """Yes to every facet and no contradiction, except where an artifact's text says."""
    if question.kind == "gate":
        return "yes" if text.startswith("CONTRADICTS") else "no"
    if text.startswith("DOWN") and question.id == "mission":
        raise JudgeUnavailableError("rate limited after 3 retries <b>&</b>")
    if text.startswith("WEAK") and question.kind != "gate":
        return "no" if question.id != "tradeoff" else "n/a"
    return "n/a" if question.id == "tradeoff" else "yes"


def hostile_gate(artifact: Artifact) -> GateOutcome:
    """A policy gate that stops the hostile artifact with hostile reasons."""
    if artifact.text.startswith("HOSTILE"):
        return GateOutcome("policy", "fail", (f"rule {HOSTILE} failed", "second reason"))
    return GateOutcome("policy", "pass")


def reason_for(question_id: str, text: str) -> str:
    """The reason the reasoning judge gives: long, multi-line, and hostile for 'WEAK'."""
    tail = f" {HOSTILE}" if text.startswith("WEAK") else ""
    return f"Reason for {question_id}:\n  the reply {text[:12]!r} was judged" + " so" * 60 + tail


class ReasoningJudge:
    """A scripted judge that also explains itself, as a model judge does."""

    def __init__(self, script: Any) -> None:
        self._mock = MockJudge(script, name="mock:test")

    @property
    def name(self) -> str:
        """The wrapped mock's name."""
        return self._mock.name

    async def answer(self, request: JudgeRequest) -> Answer:
        """The mock's answer, with a reason naming the question and the artifact."""
        answer = await self._mock.answer(request)
        reason = reason_for(request.question.id, request.artifact.text)
        return Answer(answer.distribution, rationale=reason)


def make_plan(constitution: Constitution, script: Any = scripted) -> ScoringPlan:
    """A plan scoring with the real rubric, a scripted judge that gives reasons, and the
    hostile gate."""
    return ScoringPlan(constitution, load_rubric(), ReasoningJudge(script), 0.85, (hostile_gate,))


def score(plan: ScoringPlan, artifacts: Sequence[Artifact]) -> tuple[ArtifactResult, ...]:
    """Score artifacts for real (gates, judge, verdicts)."""
    return asyncio.run(score_artifacts(plan, artifacts))


@pytest.fixture
def plan(constitution: Constitution) -> ScoringPlan:
    """The scripted plan under the example constitution."""
    return make_plan(constitution)


@pytest.fixture
def mixed(plan: ScoringPlan) -> tuple[ArtifactResult, ...]:
    """One canon, one NSCP-gated, one below threshold, one unscored, one hostile and stopped."""
    return score(plan, list(ARTIFACTS.values()))


@pytest.fixture
def regressed(
    constitution: Constitution,
) -> tuple[ScoringPlan, tuple[ArtifactResult, ...], Comparison]:
    """A check: P2 flips on 'fine' (confirmed) and on 'also-fine' (re-ask fails), 'weak'
    stays below the threshold, and the recorded 'gone' is not in the run."""
    also = Artifact("Also good.", id="also-fine")
    before = make_plan(constitution)
    recorded = score(before, [ARTIFACTS["fine"], also, ARTIFACTS["weak"], Artifact("x", id="gone")])
    # recorded as accept does (two asks a cell), from texts the run no longer has: an
    # identical text could not regress on the judge's say-so alone
    recorded = tuple(dataclasses.replace(r, digest=None) for r in recorded)
    baseline = baseline_from_results(
        recorded,
        rubric=before.rubric,
        judge="mock:test",
        constitution=constitution.digest,
        threshold=0.85,
        asks={(r.key, c.id): 2 for r in recorded for c in r.cells},
    )

    def flipped(question: Question, text: str) -> str:
        return "no" if question.id == "P2" else scripted(question, text)

    plan = make_plan(constitution, flipped)
    results = score(plan, [ARTIFACTS["fine"], also, ARTIFACTS["weak"]])
    rule = DecisionRule()
    p2 = results[0].cell("P2")
    confirmed = open_evidence(p2.question, {"no": 1.0}, rule, 30)
    while confirmed.status == "open":
        confirmed = add_answer(confirmed, {"no": 1.0}, rule, 30)
    failed = failed_reask(open_evidence(p2.question, {"no": 1.0}, rule, 30))
    evidence = {("fine", "P2"): confirmed, ("also-fine", "P2"): failed}
    return plan, results, gate(results, baseline, 0.85, 0.02, evidence=evidence, rule=rule)


@pytest.fixture
def hostile() -> str:
    """The hostile text the hostile artifact's key and gate reasons carry."""
    return HOSTILE


@pytest.fixture
def receiver() -> Iterator[Any]:
    """A running OTLP/HTTP log receiver on 127.0.0.1 (see otlp_receiver.py)."""
    with load_helper("report/otlp_receiver.py").running_receiver() as state:
        yield state

"""CoherenceMetric: score one artifact, or assert that it coheres."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from canon.confirm import confirm
from canon.core.artifact import as_artifact
from canon.core.constitution import Constitution
from canon.core.evidence import DecisionRule
from canon.core.rubric import refuse_rubric_override
from canon.core.scoring import ArtifactResult, check_threshold, failure_message
from canon.errors import UsageError
from canon.gate_loading import ContractSpec, PolicySpec, contract_gate, policy_gate
from canon.judge.base import Judge
from canon.judge.factory import judge_from_spec
from canon.judge.sync import run_sync
from canon.runner import ArtifactGate, ScoringPlan, score_artifact
from canon.store import load_rubric

_NOT_GIVEN: object = object()


class CoherenceMetric:
    """Holds a constitution, a judge and a threshold; scores artifacts against them.

    ``policy`` (a JSON policy) and ``contract`` (a trace contract or template name) run
    before the judge; an artifact that fails either is non-canon without a judge call.
    ``rule`` says how sure a failing verdict must be (see ``canon.core.evidence``).
    The metric keeps no results on itself: ``score`` returns a frozen result value.
    """

    def __init__(
        self,
        *,
        constitution: Constitution,
        judge: Judge | str,
        threshold: float = 0.85,
        policy: PolicySpec = None,
        contract: ContractSpec = None,
        gates: Sequence[ArtifactGate] = (),
        rule: DecisionRule | None = None,
        rubric: object = _NOT_GIVEN,
    ) -> None:
        if rubric is not _NOT_GIVEN:
            raise refuse_rubric_override("CoherenceMetric(rubric=...)")
        if not isinstance(constitution, Constitution):
            raise UsageError(
                "constitution must be a canon.Constitution (use constitution_from_file), "
                f"got a {type(constitution).__name__}"
            )
        if isinstance(judge, str):
            judge = judge_from_spec(judge, base_dir=Path.cwd())
        elif not isinstance(judge, Judge):
            raise UsageError(
                "judge must be a provider:model string (e.g. 'openai:gpt-4o') or a Judge "
                f"object (e.g. MockJudge), got {judge!r}"
            )
        self._plan = ScoringPlan(
            constitution=constitution,
            rubric=load_rubric(),
            judge=judge,
            threshold=check_threshold(threshold),
            gates=_gates(policy, contract, gates),
        )
        self._rule = rule or DecisionRule()

    @property
    def plan(self) -> ScoringPlan:
        """What every artifact is scored against: constitution, rubric, judge, gates."""
        return self._plan

    @property
    def rule(self) -> DecisionRule:
        """How sure a failing verdict must be before it counts."""
        return self._rule

    @property
    def threshold(self) -> float:
        """The score an artifact must reach to be canon."""
        return self._plan.threshold

    async def ascore(self, artifact: object) -> ArtifactResult:
        """Score one artifact (text or Artifact) without blocking the event loop.

        A failing verdict is confirmed by re-asking the judge first (``rule``), so one noisy
        answer does not make the artifact non-canon.
        """
        item = as_artifact(artifact)
        first = await score_artifact(self._plan, item)
        confirmation = await confirm(self._plan, [item], [first], self._rule)
        return confirmation.results[0]

    def score(self, artifact: object) -> ArtifactResult:
        """Score one artifact (text or Artifact)."""
        return run_sync(self.ascore(artifact))

    def assert_coheres(self, artifact: object) -> ArtifactResult:
        """Return the result if the artifact is canon; raise AssertionError naming what failed."""
        result = self.score(artifact)
        if not result.canon:
            raise AssertionError(failure_message(result))
        return result


def _gates(
    policy: PolicySpec, contract: ContractSpec, extra: Sequence[ArtifactGate]
) -> tuple[ArtifactGate, ...]:
    built: list[ArtifactGate] = []
    if policy is not None:
        built.append(policy_gate(policy))
    if contract is not None:
        built.append(contract_gate(contract))
    return (*built, *extra)

"""CoherenceMetric: score one artifact, or assert that it coheres."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from canon.check.capture import traced_artifact
from canon.check.confirm import Confirmation
from canon.check.gate_loading import ContractSpec, PolicySpec, contract_gate, policy_gate
from canon.check.pipeline import score_run
from canon.check.plan import build_plan
from canon.check.runner import ArtifactGate, ScoringPlan
from canon.core.compare import scored_blind_notes
from canon.core.constitution import Constitution
from canon.core.evidence import DecisionRule
from canon.core.rubric import refuse_rubric_override
from canon.core.scoring import ArtifactResult, check_threshold, fails_on_evidence, failure_message
from canon.errors import JudgeUnavailableError, UsageError
from canon.judge.base import Judge
from canon.judge.concurrency import AdaptiveLimiter
from canon.judge.sync import run_sync
from canon.project.config import Config, load_config, load_env_files
from canon.project.judge_factory import judge_from_spec
from canon.project.store import load_rubric

_NOT_GIVEN: object = object()


class CoherenceMetric:
    """Holds a constitution, a judge and a threshold; scores artifacts against them.

    ``policy`` (a JSON policy) and ``contract`` (a trace contract or template name) run
    before the judge; an artifact that fails either is non-canon without a judge call.
    ``rule`` says how sure a failing verdict must be (see ``canon.core.evidence``).
    The metric keeps no results on itself: ``score`` returns a frozen result value. It keeps
    one measurement, as a run does: how often the judge misread one response of a
    replicated artifact where the others read otherwise, over every artifact it scored
    (``canon.check.pipeline.score_run``'s ``prior``), the rate a deterministic judge's
    responses are tested at.
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
            rule=rule or DecisionRule(),
        )
        # One limiter for the metric's life: what it learns about the judge's capacity
        # carries from one artifact to the next.
        self._limiter = AdaptiveLimiter(self._plan.concurrency)
        self._measured = (0, 0)  # misread responses, readings: over the metric's life

    @classmethod
    def from_plan(cls, plan: ScoringPlan) -> Self:
        """A metric that scores with ``plan`` as it is (see ``canon.check.plan.build_plan``)."""
        metric = cls.__new__(cls)
        metric._plan = plan
        metric._limiter = AdaptiveLimiter(plan.concurrency)
        metric._measured = (0, 0)
        return metric

    @classmethod
    def from_config(
        cls, config: str | os.PathLike[str] | Config | None = None, *, use_cache: bool = True
    ) -> Self:
        """The metric a project's ``canon.yaml`` describes, as ``canon score`` would build it:
        judge and answer cache, ``confirm_judge``, ``max_cost``, ``concurrency``, the decision
        rule, the threshold and the gates. ``config``: a config file, a loaded Config, or
        None to find canon.yaml from the current directory (its .env files are loaded)."""
        if not isinstance(config, Config):
            config = load_config(None if config is None else Path(config))
            load_env_files(config.source.parent if config.source else config.base_dir)
        return cls.from_plan(build_plan(config, use_cache=use_cache))

    @property
    def plan(self) -> ScoringPlan:
        """What every artifact is scored against: constitution, rubric, judge, gates."""
        return self._plan

    @property
    def rule(self) -> DecisionRule:
        """How sure a failing verdict must be before it counts."""
        return self._plan.rule

    @property
    def threshold(self) -> float:
        """The score an artifact must reach to be canon."""
        return self._plan.threshold

    async def ascore(
        self,
        artifact: object,
        *,
        input: object = None,
        context: object = None,
        trace: object = None,
    ) -> ArtifactResult:
        """Score one artifact (text or Artifact) without blocking the event loop.

        ``input`` is the request it answers (text, or a list of ``{role, content}``
        messages) and ``context`` what the agent had to work with (text or a list of texts);
        the judge sees both. ``trace`` (a ``capture_trace()`` capture, or any trace the
        contract gate reads) replaces the artifact's; when no ``input`` is given, the
        request is read from a captured trace. A failing verdict is confirmed by re-asking
        the judge first (``rule``), so one noisy answer does not make the artifact non-canon.
        """
        return (await self._confirmed(artifact, input, context, trace)).results[0]

    async def _confirmed(
        self, artifact: object, input: object, context: object, trace: object
    ) -> Confirmation:
        if self._limiter.tripped is not None:  # a past outage must not doom later calls
            self._limiter = AdaptiveLimiter(self._plan.concurrency)
        item = traced_artifact(artifact, input=input, context=context, trace=trace)
        confirmation = await score_run(
            self._plan, [item], limiter=self._limiter, prior=self._measured
        )
        self._measured = (confirmation.power.strays, confirmation.power.readings)
        return confirmation

    def score(
        self,
        artifact: object,
        *,
        input: object = None,
        context: object = None,
        trace: object = None,
    ) -> ArtifactResult:
        """Score one artifact (text or Artifact), with the ``input``, ``context`` and
        ``trace`` it had."""
        return run_sync(self.ascore(artifact, input=input, context=context, trace=trace))

    def assert_coheres(
        self,
        artifact: object,
        *,
        input: object = None,
        context: object = None,
        trace: object = None,
    ) -> ArtifactResult:
        """Return the result if the artifact is canon; raise AssertionError naming what failed.

        When the judge could not answer and nothing else counts against the artifact, it
        raises JudgeUnavailableError instead: a broken judge is a test error, not a failure.
        A failure the judge read but that this run could not have confirmed (a decision model
        alone on one response) or that the judge stayed split on is no pass either: an
        AssertionError says it is inconclusive and what would fix it.
        """
        confirmation = run_sync(self._confirmed(artifact, input, context, trace))
        result = confirmation.results[0]
        if result.canon:
            blind = scored_blind_notes([result], confirmation.power, self._plan.rule)
            if blind:
                raise AssertionError(
                    f"inconclusive for {result.key}: this test cannot tell whether it is "
                    "canon: " + "; ".join(blind)
                )
            return result
        if not fails_on_evidence(result):
            first = result.unscored[0] if result.unscored else None
            cause = f" (first: {first.id}: {first.error})" if first is not None else ""
            raise JudgeUnavailableError(
                f"could not judge artifact {result.key}: {len(result.unscored)} of "
                f"{len(result.cells)} questions unscored{cause}; the judge failed, not the "
                "artifact"
            )
        raise AssertionError(failure_message(result))


def _gates(
    policy: PolicySpec, contract: ContractSpec, extra: Sequence[ArtifactGate]
) -> tuple[ArtifactGate, ...]:
    built: list[ArtifactGate] = []
    if policy is not None:
        built.append(policy_gate(policy))
    if contract is not None:
        built.append(contract_gate(contract))
    return (*built, *extra)

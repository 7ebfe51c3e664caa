from __future__ import annotations

import asyncio

import pytest

from canon import Artifact, CoherenceMetric
from canon.errors import (
    ConfigError,
    InputError,
    JudgeScriptError,
    JudgeUnavailableError,
    UsageError,
)
from canon.judge.mock import MockJudge

ARTIFACT = "Two charges of 19.99 EUR; Section 4.2 applies, so I refunded the second."


def test_assert_coheres_passes_silently_for_a_coherent_artifact(constitution):
    judge = MockJudge(script={"contradict": "no", "__default__": "yes"})
    metric = CoherenceMetric(constitution=constitution, judge=judge, threshold=0.85)
    result = metric.assert_coheres(ARTIFACT)
    assert result.canon and result.score == 1.0
    assert judge.calls == 5 + 1 + 4  # facets, gate, one question per principle


def test_the_issue_example_script_fails_on_the_threshold_and_names_low_questions(constitution):
    judge = MockJudge(
        script={
            "serve the mission": "yes",
            **{f"P{i}": "partly" for i in range(1, 5)},
            "__default__": "no",
        }
    )
    metric = CoherenceMetric(constitution=constitution, judge=judge, threshold=0.85)
    with pytest.raises(AssertionError) as info:
        metric.assert_coheres(ARTIFACT)
    message = str(info.value)
    assert message.startswith("non-canon artifact")
    assert "below the threshold 0.850" in message
    assert "lowest-scoring questions" in message


def test_a_contradiction_fails_through_the_nscp_gate(constitution):
    judge = MockJudge(script={"contradict": "yes", "__default__": "yes"})
    metric = CoherenceMetric(constitution=constitution, judge=judge, threshold=0.5)
    result = metric.score(ARTIFACT)
    assert result.gated and not result.canon and result.score == 0.0
    with pytest.raises(AssertionError, match="NSCP gate"):
        metric.assert_coheres(ARTIFACT)


def test_a_mis_scripted_judge_error_propagates_out_of_score_and_assert(constitution):
    metric = CoherenceMetric(
        constitution=constitution, judge=MockJudge(script={"serve the mission": "yes"})
    )
    with pytest.raises(JudgeScriptError):
        metric.score(ARTIFACT)
    with pytest.raises(JudgeScriptError):
        metric.assert_coheres(ARTIFACT)


class _FlakyJudge:
    """A judge that cannot answer one question, as a real judge might after retries."""

    name = "flaky"

    async def answer(self, request):
        from canon import Answer

        if request.question.id == "scope":
            raise JudgeUnavailableError("connection refused after 3 attempts")
        return Answer({"no" if request.question.kind == "gate" else "yes": 1.0})


def test_a_judge_failure_becomes_an_unscored_cell_never_a_pass(constitution):
    result = CoherenceMetric(constitution=constitution, judge=_FlakyJudge()).score(ARTIFACT)
    assert not result.canon
    assert [c.id for c in result.unscored] == ["scope"]
    assert "connection refused" in result.unscored[0].error


def test_score_works_inside_a_running_event_loop(constitution):
    metric = CoherenceMetric(
        constitution=constitution, judge=MockJudge(script={"__default__": "no"})
    )

    async def inside_loop():
        return metric.score(ARTIFACT), await metric.ascore(ARTIFACT)

    from_sync, from_async = asyncio.run(inside_loop())
    assert from_sync == from_async


def test_artifact_values_carry_a_stable_key(constitution):
    metric = CoherenceMetric(
        constitution=constitution, judge=MockJudge(script={"__default__": "no"})
    )
    assert metric.score(Artifact(ARTIFACT, id="refund")).key == "refund"
    assert metric.score(ARTIFACT).key == metric.score(Artifact(ARTIFACT)).key
    assert len(metric.score(ARTIFACT).key) == 12


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"threshold": 1.5}, UsageError),
        ({"threshold": "high"}, UsageError),
        ({"judge": 42}, UsageError),
        ({"judge": "gpt-4o"}, ConfigError),
        ({"constitution": {"mission": "x"}}, UsageError),
    ],
)
def test_bad_metric_arguments_are_refused(constitution, kwargs, error):
    arguments = {"constitution": constitution, "judge": MockJudge(script={"__default__": "no"})}
    arguments.update(kwargs)
    with pytest.raises(error):
        CoherenceMetric(**arguments)


@pytest.mark.parametrize("artifact", [None, 42, "   ", Artifact("")])
def test_unusable_artifacts_are_refused(constitution, artifact):
    metric = CoherenceMetric(
        constitution=constitution, judge=MockJudge(script={"__default__": "no"})
    )
    with pytest.raises(InputError):
        metric.score(artifact)


def test_a_provider_model_string_becomes_a_model_judge_without_calling_it(constitution):
    metric = CoherenceMetric(constitution=constitution, judge="openai:gpt-4o")
    assert metric._plan.judge.name == "openai/gpt-4o"

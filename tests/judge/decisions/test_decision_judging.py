"""A decision model as the run's judge: one call per response carrying every question in
every wording, its answers kept as looks, the cache per question, the budget per call, the
estimate, and pinning (an alias refused for a baseline, another answering release refused
for a check). Against the tests' own decision server and jevcompat's mock, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from jevcompat.mock import MockConfig, Running

from canon.check.pipeline import baseline_from_run, compare_run, score_run
from canon.check.plan import with_budget
from canon.check.provenance import JudgeChangedError
from canon.check.runner import ScoringPlan, score_artifact
from canon.check.spend import estimate_run
from canon.core.artifact import Artifact
from canon.core.evidence import DecisionRule
from canon.core.outcome import NoteKind
from canon.core.scoring import cell_reason
from canon.errors import BudgetExceededError, ConfigError
from canon.judge.cache import cached_judge
from canon.judge.decisions import asking
from canon.judge.decisions.asking import AskedQuestion
from canon.judge.decisions.client import Pace
from canon.judge.decisions.judge import DecisionJudge
from canon.judge.decisions.wires import WIRES
from canon.project.store import load_rubric
from canon.report.json_report import result_record

from .conftest import decision_server, helpers
from support.cli import copy_example, run_canon

RUBRIC = load_rubric()


def _plan(judge: Any) -> ScoringPlan:
    return ScoringPlan(helpers.CONSTITUTION, RUBRIC, judge, threshold=0.5)


def _judge(root: str, model: str = "jev-1.13.0") -> DecisionJudge:
    return DecisionJudge("typesafe", model, api_key="k", api_base=root, timeout=2.0)


def _wordings(plan: ScoringPlan) -> int:
    return sum(len(q.wordings) + 1 for q in plan.questions)


def test_one_call_per_response_asks_every_question_in_every_wording() -> None:
    with decision_server.running() as server:
        plan = _plan(_judge(server.url))
        replicated = Artifact("First reply.", id="r", replicates=("Second one.", "Third one."))
        single = asyncio.run(score_artifact(plan, helpers.ARTIFACT))
        pooled = asyncio.run(score_artifact(plan, replicated))
    assert len(server.requests) == 1 + 3  # one per response
    assert all(len(body["questions"]) == _wordings(plan) for body in server.requests)
    cell = single.cell("G")
    assert cell.state == "answered" and len(cell.looks) == len(cell.question.wordings) + 1
    # the cell's answer is the mean of its looks
    mean: dict[str, float] = {}
    for look in cell.looks:
        for label, mass in look.distribution:
            mean[label] = mean.get(label, 0.0) + mass / len(cell.looks)
    assert dict(cell.distribution) == pytest.approx(mean)
    assert {look.response for look in pooled.cell("G").looks} == {0, 1, 2}
    # the call's usage is counted once, on the first question
    assert single.cells[0].usage is not None and single.cells[0].usage.calls == 1
    assert all(c.usage is not None and c.usage.calls == 0 for c in single.cells[1:])


def test_a_missing_answer_leaves_only_its_question_unscored() -> None:
    def drop_scope(reply: dict[str, Any]) -> dict[str, Any]:
        reply["answers"] = {k: v for k, v in reply["answers"].items() if not k.startswith("scope")}
        return reply

    state = decision_server.DecisionServer(tamper=drop_scope)
    with decision_server.running(state) as server:
        result = asyncio.run(score_artifact(_plan(_judge(server.url)), helpers.ARTIFACT))
    assert result.cell("scope").state == "unscored"
    assert "missing" in (result.cell("scope").error or "")
    assert all(c.state != "unscored" for c in result.cells if c.id != "scope")


def test_the_cache_keeps_answers_per_question_and_a_second_run_makes_no_call(
    tmp_path: Path,
) -> None:
    with decision_server.running() as server:
        judge = cached_judge(_judge(server.url), tmp_path / "cache.sqlite3")
        first = asyncio.run(score_artifact(_plan(judge), helpers.ARTIFACT))
        again = asyncio.run(score_artifact(_plan(judge), helpers.ARTIFACT))
    assert len(server.requests) == 1
    for before, after in zip(first.cells, again.cells, strict=True):
        assert dict(after.distribution) == pytest.approx(dict(before.distribution))
    assert all(c.usage is None for c in again.cells)  # answers without a call


def test_the_estimate_counts_only_what_the_model_reads(
    state: dict[str, Any], asked: tuple[AskedQuestion, ...]
) -> None:
    # System One never shows the model a question's id or the model name: neither counts
    systemone = WIRES["typesafe"]
    body = systemone.build("jev-1.13.0", state, asked)
    renamed = {
        **body,
        "model": "a-much-longer-model-name",
        "questions": {f"{key}-renamed-{'x' * 40}": q for key, q in body["questions"].items()},
    }
    assert systemone.tokens(renamed) == systemone.tokens(body)
    # the state (the artifact) and the questions' text do
    longer = systemone.build("jev-1.13.0", {**state, "artifact": state["artifact"] * 2}, asked)
    assert systemone.tokens(longer) >= systemone.tokens(body) + len(state["artifact"]) // 4
    # OpenAI's input is text the model reads as it is, not as the JSON string it travels in
    openai = WIRES["openai-decisions"]
    quoted = {**state, "artifact": '"' * 400}
    plain = {**state, "artifact": "x" * 400}
    extra = openai.tokens(openai.build("gpt-6-luna", quoted, asked)) - openai.tokens(
        openai.build("gpt-6-luna", plain, asked)
    )
    assert 90 <= extra <= 110  # each quote escaped once in the state's JSON: +400 characters


def test_answers_cached_before_the_asking_changed_are_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the cache keys an answer by the question as the rubric words it; the decision call's
    # own text (here its task) is part of the judge's identity, so a changed one asks again
    with decision_server.running() as server:
        asyncio.run(
            score_artifact(
                _plan(cached_judge(_judge(server.url), tmp_path / "c")), helpers.ARTIFACT
            )
        )
        monkeypatch.setattr(asking, "decision_task", lambda request, context: "Judge it.")
        again = cached_judge(_judge(server.url), tmp_path / "c")
        asyncio.run(score_artifact(_plan(again), helpers.ARTIFACT))
    assert len(server.requests) == 2
    assert server.requests[1]["state"]["task"] == "Judge it."
    assert again.hits == 0


def test_max_cost_stops_before_a_call_that_would_cross_it() -> None:
    with decision_server.running() as server:
        plan = with_budget(_plan(_judge(server.url)), 1e-9, "canon.yaml")
        with pytest.raises(BudgetExceededError, match=r"max_cost .* in canon\.yaml: 0 request"):
            asyncio.run(score_artifact(plan, helpers.ARTIFACT))
        assert server.requests == []
        # a budget just above one call's guess (the estimate's price) lets one call go; the
        # next would cross it with what the first really cost (the server's 420 tokens)
        guess = estimate_run(_plan(_judge(server.url)), [helpers.ARTIFACT]).cost
        assert guess is not None and guess > 420 * 0.042e-6
        plan = with_budget(_plan(_judge(server.url)), guess * 1.05, "canon.yaml")
        asyncio.run(score_artifact(plan, helpers.ARTIFACT))
        with pytest.raises(BudgetExceededError):
            asyncio.run(score_artifact(plan, helpers.ARTIFACT))
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "artifact",
    [
        helpers.ARTIFACT,  # a chat request and context
        Artifact("Hello."),  # the artifact alone
        Artifact("Ihre Rückerstattung über 12 € ist unterwegs. ✓", input="Wo bleibt mein Geld?"),
    ],
    ids=["request-and-context", "bare", "non-ascii"],
)
def test_the_estimate_never_undercounts_what_jevcompat_bills(artifact: Artifact) -> None:
    with Running(MockConfig(key=None)) as mock:
        plan = _plan(_judge(mock.url))
        estimate = estimate_run(plan, [artifact])
        result = asyncio.run(score_artifact(plan, artifact))
    usage = result.cells[0].usage
    assert usage is not None and usage.calls == 1
    assert (estimate.calls, estimate.asking, estimate.completion_tokens) == (1, _wordings(plan), 0)
    # jevcompat bills the compact JSON of the state and of each question, each // 4; the
    # estimate counts the same parts rounded up: never below the bill, at most one token a
    # part above it (the state and every asked question)
    assert (
        usage.prompt_tokens <= estimate.prompt_tokens <= usage.prompt_tokens + 1 + _wordings(plan)
    )
    assert usage.cost is not None and estimate.cost is not None
    assert usage.cost <= estimate.cost <= usage.cost * 1.02


def test_an_alias_cannot_record_a_baseline_and_the_answering_model_is_recorded() -> None:
    with Running(MockConfig(key=None)) as mock:
        for model, refused in (("jev-latest", True), ("jev-1.13.0", False)):
            plan = _plan(_judge(mock.url, model))
            run = asyncio.run(score_run(plan, [helpers.ARTIFACT], record=True))
            if refused:
                with pytest.raises(ConfigError, match=r"alias.*typesafe:jev-1\.13\.0"):
                    baseline_from_run(plan, run)
            else:
                baseline = baseline_from_run(plan, run)
    assert baseline.judge == "typesafe:jev-1.13.0"
    assert baseline.answered_by == ("jevcompat-mock-0.1",)


def test_a_check_answered_by_another_release_is_refused_as_a_judge_change() -> None:
    with decision_server.running() as server:
        plan = _plan(_judge(server.url))
        accepted = baseline_from_run(
            plan, asyncio.run(score_run(plan, [helpers.ARTIFACT], record=True))
        )
        server.model = "jev-1.14.0"  # the same name now served by another release
        later = _plan(_judge(server.url))
        run = asyncio.run(score_run(later, [helpers.ARTIFACT], baseline=accepted))
    assert accepted.answered_by == ("gpt-6-luna",)
    with pytest.raises(JudgeChangedError, match="canon rejudge"):
        compare_run(later, run, accepted, 0.02, DecisionRule())


def test_reports_show_the_probabilities_where_the_judge_gives_no_reason() -> None:
    with decision_server.running() as server:
        result = asyncio.run(score_artifact(_plan(_judge(server.url)), helpers.ARTIFACT))
    cell = result.cell("mission")
    assert cell.rationale is None
    reason = cell_reason(cell)
    assert reason is not None and reason.startswith("no reason given; the judge's probabilities")
    assert "wording 1: " in reason and "wording 3: " in reason
    record = result_record(result)["questions"]["mission"]
    assert record["probabilities"] == pytest.approx(dict(cell.distribution), abs=1e-6)
    assert [look["wording"] for look in record["looks"]] == [0, 1, 2]
    assert sum(record["looks"][1]["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)


def test_the_cli_scores_with_one_call_per_artifact_refuses_batch_and_an_alias(
    tmp_path: Path,
) -> None:
    project = copy_example(tmp_path)
    config = project / "canon.yaml"
    text = config.read_text(encoding="utf-8")
    with decision_server.running() as server:
        env = {**os.environ, "TYPESAFE_BASE_URL": server.url, "TYPESAFE_API_KEY": "k"}
        config.write_text(
            text.replace("judge_model: mock:judge-script.yaml", "judge_model: typesafe:jev-1.13.0")
        )
        batched = run_canon(project, "score", "--batch", env=env)
        assert batched.returncode == 2 and server.requests == []
        assert "the typesafe wire has no batch mode" in batched.stderr
        scored = run_canon(project, "score", "--format", "json", env=env)
        calls = len(server.requests)
        whole = [body for body in server.requests if len(body["questions"]) > 1]
        config.write_text(
            text.replace("judge_model: mock:judge-script.yaml", "judge_model: typesafe:jev-latest")
        )
        accepted = run_canon(project, "accept", env=env)
    assert scored.returncode in (0, 1, 6), scored.stderr  # 6: a failure read, unconfirmable
    assert len(whole) == 3  # three artifacts, one call each carrying every question
    document = json.loads(scored.stdout)
    assert document["usage"]["calls"] == calls and document["usage"]["cost_usd"] > 0
    assert accepted.returncode == 2 and len(server.requests) == calls  # refused before a call
    assert "alias" in accepted.stderr and "typesafe:jev-1.13.0" in accepted.stderr
    assert not (project / "baselines" / "suite.json").exists() or "jev-latest" not in (
        project / "baselines" / "suite.json"
    ).read_text(encoding="utf-8")


def test_calls_never_go_faster_than_the_wires_published_rate() -> None:
    pace = Pace(1200)  # System One's 1,200 requests a minute: one every 0.05 s

    async def calls() -> list[float]:
        stamps: list[float] = []

        async def one() -> None:
            await pace.wait()
            stamps.append(time.monotonic())

        await asyncio.gather(*(one() for _ in range(6)))
        return sorted(stamps)

    stamps = asyncio.run(calls())
    # Call k starts no sooner than k slots after the first (a late wake-up under load may
    # bring two calls closer, never the run ahead of the rate).
    assert all(t - stamps[0] >= k * 0.05 - 0.002 for k, t in enumerate(stamps))
    assert WIRES["typesafe"].per_minute == 1200 and WIRES["openai-decisions"].per_minute is None


def test_one_response_to_a_decision_judge_alone_is_inconclusive_only_where_a_text_changed() -> None:
    reworded = dataclasses.replace(helpers.ARTIFACT, text="Send me the full card number, please.")
    with decision_server.running() as server:
        plan = _plan(_judge(server.url))
        accepted = baseline_from_run(
            plan, asyncio.run(score_run(plan, [helpers.ARTIFACT], record=True))
        )
        same = asyncio.run(score_run(plan, [helpers.ARTIFACT], baseline=accepted))
        other = asyncio.run(score_run(plan, [reworded], baseline=accepted))
    rule = DecisionRule()
    assert compare_run(plan, same, accepted, 0.02, rule).status == "conforms"
    changed = compare_run(plan, other, accepted, 0.02, rule)
    assert changed.status == "inconclusive"
    assert any(getattr(why, "kind", None) is NoteKind.UNCONFIRMABLE for why in changed.inconclusive)

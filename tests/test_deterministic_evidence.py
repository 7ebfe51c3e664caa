"""Evidence when the judge is deterministic (issue 23, section 3): identical re-asks are no
evidence, responses and a confirm judge are, and a check that could not have seen a
regression is inconclusive. The full trials are benchmarks/bench_deterministic_evidence.py;
these are small seeded versions of its claims, through the library calls the CLI uses."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.baseline import Baseline, baseline_from_data, baseline_to_data
from canon.core.comparison import Comparison
from canon.core.constitution import Constitution, Principle
from canon.core.evidence import (
    REFUTE_BAR,
    SPLIT_BAR,
    DecisionRule,
    Unit,
    add_answer,
    evidence_from_units,
    open_evidence,
    split_within,
)
from canon.core.outcome import NoteKind
from canon.core.scoring import Answer, ArtifactResult, Cell, Look
from canon.core.settle import response_strays, too_noisy, unit_flip_rate
from canon.errors import ExitCode
from canon.judge.base import JudgeRequest, ResponseAnswers
from canon.project.store import load_rubric
from canon.report.check import check_document, exit_code_for, render_check
from canon.report.github import github_annotations
from canon.report.html import html_report
from canon.report.junit import junit_xml

RUBRIC = load_rubric()
CONSTITUTION = Constitution(
    "Resolve billing questions within the handbook.",
    (Principle("Never ask for a full card number."), Principle("Hand big refunds to a person.")),
)
QUESTIONS = {q.id: q for q in RUBRIC.questions_for(CONSTITUTION)}
PLANTED = "a0"

Truth = Callable[[str, str], str]


def clean(_key: str, qid: str) -> str:
    return "no" if qid == "G" else "yes"


def planted(key: str, qid: str) -> str:
    if key == PLANTED and qid in ("G", "P2"):
        return "yes" if qid == "G" else "no"
    return clean(key, qid)


@dataclass
class Decisions:
    """A deterministic judge answering every question in every wording about a response in
    one call; ``misread`` holds (response text, question id) pairs it reads wrongly."""

    truth: Truth
    misread: frozenset[tuple[str, str]] = frozenset()
    deterministic: bool = True
    calls: int = 0
    single: int = 0  # one-question calls (never made by a check of a deterministic judge)

    @property
    def name(self) -> str:
        return "test-decisions"

    def reply(self, request: JudgeRequest) -> Answer:
        question = request.question
        label = self.truth(request.artifact.id or "", question.id)
        if (request.artifact.text, question.id) in self.misread:
            label = "yes" if label == "no" else "no"
        rest = [c.label for c in question.choices if c.label != label]
        return Answer({label: 0.9, **{other: 0.1 / len(rest) for other in rest}})

    async def answer(self, request: JudgeRequest) -> Answer:
        self.single += 1
        return self.reply(request)

    async def answer_all(self, requests: Sequence[JudgeRequest]) -> ResponseAnswers:
        self.calls += 1
        return ResponseAnswers({i: self.reply(r) for i, r in enumerate(requests)})


@dataclass
class Sampler:
    """A sampling LLM that is right but for ``noise`` of its asks; it gives reasons."""

    truth: Truth
    seed: int = 1
    noise: float = 0.0
    asked: list[tuple[str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "test-llm"

    async def answer(self, request: JudgeRequest) -> Answer:
        key, qid = request.artifact.id or "", request.question.id
        self.asked.append((key, qid))
        label = self.truth(key, qid)
        rng = random.Random(f"{self.seed}|{len(self.asked)}")
        if rng.random() < self.noise:
            label = rng.choice([c.label for c in request.question.choices if c.label != label])
        return Answer({label: 1.0}, f"LLM reason: {qid} reads {label}")


@dataclass
class Temperature0:
    """A one-question judge that replays its answer: deterministic, no whole-response call."""

    truth: Truth
    deterministic: bool = True
    calls: int = 0

    @property
    def name(self) -> str:
        return "test-temperature-0"

    async def answer(self, request: JudgeRequest) -> Answer:
        self.calls += 1
        return Answer({self.truth(request.artifact.id or "", request.question.id): 1.0})


@dataclass
class CoinFlip:
    """Samples a coin flip on the planted artifact's gate; right everywhere else."""

    truth: Truth
    seed: int = 3
    asks: int = 0

    @property
    def name(self) -> str:
        return "test-coin"

    async def answer(self, request: JudgeRequest) -> Answer:
        key, qid = request.artifact.id or "", request.question.id
        if key == PLANTED and qid == "G":
            self.asks += 1
            # the first two asks read a contradiction, then strictly alternate
            return Answer({"yes" if self.asks <= 2 or self.asks % 2 else "no": 1.0})
        return Answer({clean(key, qid): 1.0})


def suite(size: int, run: int, replicates: int) -> list[Artifact]:
    artifacts = []
    for i in range(size):
        texts = tuple(f"Reply {i}, run {run}, response {j}." for j in range(replicates))
        artifacts.append(Artifact(texts[0], id=f"a{i}", replicates=texts[1:]))
    return artifacts


def _accept(plan: ScoringPlan, size: int, replicates: int) -> Baseline:
    accepted = asyncio.run(score_run(plan, suite(size, 0, replicates), record=True))
    return baseline_from_data(baseline_to_data(baseline_from_run(plan, accepted)), source="t")


def _check(plan: ScoringPlan, baseline: Baseline, size: int, replicates: int) -> Comparison:
    return asyncio.run(check_run(plan, suite(size, 1, replicates), baseline)).comparison


def _plan(judge: object, confirm: object | None = None) -> ScoringPlan:
    return ScoringPlan(CONSTITUTION, RUBRIC, judge, 0.85, confirm_judge=confirm)  # type: ignore[arg-type]


def _named(comparison: Comparison) -> set[str]:
    return {n.key for n in comparison.failures} | {f.key for f in comparison.regressions}


def _kinds(comparison: Comparison) -> set[NoteKind]:
    return {getattr(n, "kind", NoteKind.OTHER) for n in comparison.inconclusive}


# -- the pure pieces ------------------------------------------------------------------


def test_a_unit_counts_once_at_the_share_of_its_answers_that_read_the_claim():
    rule = DecisionRule()
    labels = frozenset({"no"})
    question = QUESTIONS["P1"]
    # three wordings of one response: one unit, however many of them agree
    one = evidence_from_units(question, labels, [Unit((1.0, 1.0, 1.0), 0.15)], [], rule, 30)
    assert one.e_value == pytest.approx(0.85 / 0.15)
    assert one.units == 1 and one.asks == 3
    # units multiply; a unit against the claim divides
    three = [Unit((1.0,), 0.01)] * 3
    assert evidence_from_units(question, labels, three, [], rule, 30).status == "confirmed"
    against = [Unit((1.0,), 0.01), Unit((1.0,), 0.01), Unit((0.0,), 0.01)]
    two_of_three = evidence_from_units(question, labels, against, [], rule, 330)
    assert two_of_three.status != "confirmed"
    assert two_of_three.e_value == pytest.approx(99.0**2 * 0.01 / 0.99)


def test_a_half_and_half_response_is_split_and_a_consistent_one_is_not():
    rule = DecisionRule()
    assert split_within(8, 8, rule) > 100
    assert split_within(5, 0, rule) < 0.15
    assert split_within(0, 5, rule) < 0.15
    assert split_within(8, 0, rule) < 1.0 / REFUTE_BAR  # eight one way clear a coin


@pytest.mark.parametrize("agreed, disagreed", [(0, 0), (1, 0), (2, 5), (6, 3), (7, 7)])
def test_a_coin_flip_clears_a_claim_no_more_often_than_the_bar_allows(agreed, disagreed):
    # Under a half-and-half judge the inverse ratio is a martingale: one more answer, either
    # way with probability 1/2, leaves its expectation where it was (so by Ville's inequality
    # a coin falls to 1 / REFUTE_BAR with probability at most 1 / REFUTE_BAR). Taking the
    # likelier way instead of both breaks this where neither way leads: (0, 0), (7, 7).
    rule = DecisionRule()
    now = 1.0 / split_within(agreed, disagreed, rule)
    later = 0.5 / split_within(agreed + 1, disagreed, rule)
    later += 0.5 / split_within(agreed, disagreed + 1, rule)
    assert later == pytest.approx(now, rel=1e-9)


def _asked(masses: Sequence[float], cells: int = 30) -> list[str]:
    """The statuses of P1's claim "no" (first answer 0.6 on it) as answers putting each of
    ``masses`` on it come in."""
    rule = DecisionRule()
    evidence = open_evidence(QUESTIONS["P1"], {"no": 0.6, "yes": 0.4}, rule, cells)
    assert evidence.labels == frozenset({"no"})
    seen = []
    for mass in masses:
        evidence = add_answer(evidence, {"no": mass, "yes": 1.0 - mass}, rule, cells)
        seen.append("split" if evidence.is_split else evidence.status)
    return seen


@pytest.mark.parametrize("mass", [0.25, 0.3, 0.5])
def test_a_judge_whose_own_probabilities_sit_between_the_readings_confirms_nothing(mass):
    # A judge that gives its probabilities (logprobs) and puts ``mass`` on the claim each
    # time: well over the flip rate, so the null falls (the e-value passes the bar), but
    # well short of bearing the claim out. Such a judge is unsure; counted as confirming,
    # it read an unchanged suite as regressed in 52 % of checks (bench_deterministic_evidence
    # llm-wide). It ends split: the check is inconclusive, never a regression, never a pass.
    seen = _asked([mass] * 16)
    assert "confirmed" not in seen and seen[-1] == "split"


def test_a_judge_sure_of_the_claim_confirms_it_and_one_sure_against_it_refutes_it():
    assert _asked([0.9] * 16)[-1] == "confirmed"
    assert _asked([0.02] * 16)[-1] == "refuted"


def test_hard_labels_are_never_unsure():
    # One label an answer moves the e-value and its mirror by the same factor, opposite
    # ways: both can never be high, so labels keep the rule they always had.
    rule = DecisionRule()
    rng = random.Random(7)
    for _ in range(300):
        evidence = open_evidence(QUESTIONS["P1"], {"no": 1.0}, rule, 30)
        for _ in range(16):
            label = "no" if rng.random() < rng.choice((0.15, 0.5, 0.85)) else "yes"
            evidence = add_answer(evidence, {label: 1.0}, rule, 30)
            assert not evidence.unsure
            assert min(evidence.e_value, evidence.against) < SPLIT_BAR


def _cell(qid: str, looks: list[tuple[int, str]]) -> Cell:
    question = QUESTIONS[qid]
    return Cell(
        question,
        "answered",
        1.0,
        1.0,
        (("yes", 1.0),),
        looks=tuple(Look(r, 0, ((label, 1.0),)) for r, label in looks),
    )


def test_response_strays_count_a_response_read_violated_beside_satisfied_ones():
    cells = (
        _cell("P1", [(0, "yes"), (1, "yes"), (2, "no")]),  # one stray of three readings
        _cell("P2", [(0, "no"), (1, "no"), (2, "yes")]),  # the others read violated: none
        _cell("mission", [(0, "yes"), (1, "yes"), (2, "yes")]),
    )
    result = ArtifactResult("a", True, 1.0, 1.0, False, 0.85, cells=cells)
    assert response_strays([result]) == (1, 4)
    # few readings: the rule's own rate; many and clean: measured lower; noisy: flagged
    assert unit_flip_rate(1, 4, 0.15) == 0.15
    assert unit_flip_rate(0, 990, 0.15) < 0.01
    assert too_noisy(300, 990, 0.15) and not too_noisy(10, 990, 0.15)


# -- through score, accept and check ------------------------------------------------------


def test_a_deterministic_judge_is_asked_once_per_response_and_never_again():
    judge = Decisions(clean)
    plan = _plan(judge)
    baseline = _accept(plan, 6, 3)
    assert judge.calls == 18 and judge.single == 0  # accept: no second looks, no re-asks
    check = Decisions(planted)
    comparison = _check(_plan(check), baseline, 6, 3)
    assert check.calls == 18 and check.single == 0  # the planted flip needed no re-ask
    assert comparison.status == "regressed" and _named(comparison) == {PLANTED}
    recorded = baseline.artifacts["a1"].questions
    assert recorded is not None and recorded["P1"].asks == 9  # 3 responses x 3 wordings


def test_with_replicates_one_misread_response_does_not_fail_and_three_agreeing_do():
    misread = frozenset({("Reply 2, run 1, response 0.", "P1")})
    baseline = _accept(_plan(Decisions(clean)), 6, 3)
    aa = _check(_plan(Decisions(clean, misread)), baseline, 6, 3)
    assert aa.status == "conforms", aa.inconclusive
    both = misread | {("Reply 2, run 1, response 1.", "P1")}
    two = _check(_plan(Decisions(clean, both)), baseline, 6, 3)
    assert two.status == "conforms" and not two.regressions  # two of three: not beyond noise


def test_one_response_and_no_confirm_judge_is_inconclusive_pass_or_fail():
    baseline = _accept(_plan(Decisions(clean)), 6, 1)
    for truth in (clean, planted):
        comparison = _check(_plan(Decisions(truth)), baseline, 6, 1)
        assert comparison.status == "inconclusive"
        assert NoteKind.UNCONFIRMABLE in _kinds(comparison)
        assert exit_code_for(comparison) == ExitCode.INCONCLUSIVE
        assert not comparison.regressions  # never a confident regression


def test_a_temperature_0_judge_is_not_re_asked_and_cannot_confirm_alone():
    judge = Temperature0(clean)
    baseline = _accept(_plan(judge), 4, 1)
    assert judge.calls == 4 * len(QUESTIONS)  # no second looks: they would replay
    check = Temperature0(planted)
    comparison = _check(_plan(check), baseline, 4, 1)
    assert check.calls == 4 * len(QUESTIONS)
    assert comparison.status == "inconclusive" and NoteKind.UNCONFIRMABLE in _kinds(comparison)


def test_a_confirm_judge_confirms_a_decision_models_flip_and_gives_the_reason():
    baseline = _accept(_plan(Decisions(clean), Sampler(clean)), 6, 1)
    llm = Sampler(planted)
    outcome = asyncio.run(check_run(_plan(Decisions(planted), llm), suite(6, 1, 1), baseline))
    comparison = outcome.comparison
    assert comparison.status == "regressed" and _named(comparison) == {PLANTED}
    # asked only about the cells the failure hangs on
    assert set(llm.asked) <= {(PLANTED, "G"), (PLANTED, "P2")}
    (result,) = [r for r in outcome.results if r.key == PLANTED]
    assert result.cell("P2").rationale == "LLM reason: P2 reads no"


def test_a_confirm_judge_clears_a_decision_models_misreading():
    misread = frozenset({("Reply 3, run 1, response 0.", "P1")})
    baseline = _accept(_plan(Decisions(clean), Sampler(clean)), 6, 1)
    llm = Sampler(clean)
    comparison = _check(_plan(Decisions(clean, misread), llm), baseline, 6, 1)
    assert comparison.status == "conforms", comparison.inconclusive
    assert set(llm.asked) == {("a3", "P1")}


def test_a_judge_split_on_a_cell_a_verdict_hangs_on_is_inconclusive_not_a_pass():
    baseline = _accept(_plan(CoinFlip(clean)), 4, 1)
    comparison = _check(_plan(CoinFlip(planted)), baseline, 4, 1)
    assert comparison.status == "inconclusive"
    assert NoteKind.JUDGE_SPLIT in _kinds(comparison)
    text = render_check(comparison, baseline, suite="suite", path="b.json")
    assert "stayed split over its re-asks" in text
    # a sampling judge: its spread on the first ask would show the split
    assert "set judge_options samples: 5 (a judge read from labels asks 3 answers" in text
    document = check_document(comparison, baseline, suite="suite", path="b.json")
    assert document["status"] == "inconclusive"
    assert any("stayed split" in line for line in json.loads(json.dumps(document))["inconclusive"])


@dataclass
class StuckResponse:
    """Reads some responses as contradicting, every time; right elsewhere."""

    texts: frozenset[str]
    asks: int = 0

    @property
    def name(self) -> str:
        return "test-stuck"

    async def answer(self, request: JudgeRequest) -> Answer:
        key, qid = request.artifact.id or "", request.question.id
        if qid == "G" and request.artifact.text in self.texts:
            self.asks += 1
            return Answer({"yes": 1.0})
        return Answer({clean(key, qid): 1.0})


def test_a_judge_split_within_every_response_of_a_replicated_artifact_is_not_a_pass():
    # Each of the three responses gets answers both ways (the asks alternate and rotate over
    # the responses): a coin flip on this text. Two net disagreeing answers used to clear the
    # claim; now only each response read one way throughout does, and here none is.
    baseline = _accept(_plan(CoinFlip(clean)), 4, 3)
    coin = CoinFlip(planted)
    comparison = _check(_plan(coin), baseline, 4, 3)
    assert comparison.status == "inconclusive", comparison
    assert NoteKind.JUDGE_SPLIT in _kinds(comparison)
    assert coin.asks > 2 * DecisionRule().max_reasks  # the re-asks were extended first


def test_misreadings_stuck_to_responses_are_not_a_split():
    # The responses differ (two always read as contradicting, one never): each is read one
    # way throughout, so the judge is not split; the claim is undecided (a note), no failure.
    baseline = _accept(_plan(StuckResponse(frozenset())), 4, 3)
    judge = StuckResponse(frozenset({"Reply 2, run 1, response 1.", "Reply 2, run 1, response 2."}))
    comparison = _check(_plan(judge), baseline, 4, 3)
    assert comparison.status == "conforms", comparison.inconclusive
    assert judge.asks >= 2


def test_every_report_says_why_a_deterministic_judge_alone_could_not_tell():
    plan = _plan(Decisions(planted))
    baseline = _accept(_plan(Decisions(clean)), 4, 1)
    outcome = asyncio.run(check_run(plan, suite(4, 1, 1), baseline))
    comparison, results = outcome.comparison, outcome.results
    said = "could have been confirmed"
    assert exit_code_for(comparison) == ExitCode.INCONCLUSIVE
    assert said in render_check(comparison, baseline, suite="s", path="b.json")
    document = check_document(comparison, baseline, suite="s", path="b.json")
    assert document["status"] == "inconclusive"
    assert any(said in line for line in document["inconclusive"])
    assert said in junit_xml(results, plan, suite="s", comparison=comparison)
    assert said in github_annotations(results, comparison)
    assert said in html_report(results, plan, suite="s", comparison=comparison)
    assert "a confirm_judge that samples" in render_check(
        comparison, baseline, suite="s", path="b.json"
    )

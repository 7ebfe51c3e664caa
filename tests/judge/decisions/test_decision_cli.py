"""Decision judges end to end: `canon` in real processes against decision servers on 127.0.0.1.

The System One wire is served by ``jevcompat mock`` (a third-party reference server, run in
this process) and by the tests' own decision server (decision_server.py, for OpenAI's
Decisions wire and the faults jevcompat has no switch for). Each scoring command sends one
request per response carrying every question in every wording; every request the server
received is counted in the usage the command reports, priced at the wire's list price.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from canon import constitution_from_file
from canon.errors import ExitCode
from canon.project.store import load_rubric

from support.cli import EXAMPLES, copy_example, run_canon
from support.helper_modules import load_helper
from support.jevcompat_server import running_jevcompat
from support.network import without_otel

decision_server = load_helper("judge/decisions/decision_server.py")

ARTIFACTS = ("duplicate-charge", "large-refund", "roaming-question")
JEV = 0.042e-6  # USD per input token, jev-1.13.0
LUNA = 0.10e-6  # USD per input token, gpt-6-luna
# Every question of the example's rubric in every one of its fixed wordings: one call's worth.
ASKED = sum(
    len(q.wordings) + 1
    for q in load_rubric().questions_for(constitution_from_file(EXAMPLES / "constitution.yaml"))
)
REQUEST = "I was charged twice for March. Can you fix it?"  # duplicate-charge's, by its trace
REPLICATED = "artifacts:\n" + "".join(
    f"  - id: a{i}\n    text:\n"
    f"      - I refunded the second of two {i}9.99 EUR charges.\n"
    f"      - Refunded the duplicate {i}9.99 EUR charge.\n"
    for i in range(3)
)
LABELS = "".join(
    json.dumps({"id": f"a{i}", "labels": {"G": "no", "honesty": "yes"}}) + "\n" for i in range(3)
)
ONE_ARTIFACT = (
    "artifacts:\n  - id: refund\n    text: I refunded the second of two 19.99 EUR charges.\n"
)


@dataclass
class Served:
    """A decision server the test started: the judge_model naming it, the environment that
    aims `canon` at it, and the bodies of the requests it answered."""

    judge_model: str
    env: dict[str, str]
    price: float
    bodies: list[dict[str, Any]] = field(default_factory=list)
    received: Callable[[], int] = lambda: 0

    def full_calls(self) -> int:
        """The requests that asked every question of the rubric in every wording."""
        return sum(1 for body in self.bodies if len(body["questions"]) == ASKED)


@contextmanager
def jevcompat(**options: Any) -> Iterator[Served]:
    """jevcompat's mock, recording the bodies it answers, at ``typesafe:jev-1.13.0``."""
    with running_jevcompat(**options) as running:
        env = without_otel(TYPESAFE_BASE_URL=running.url, TYPESAFE_API_KEY="k")
        config = running.config
        yield Served(
            "typesafe:jev-1.13.0", env, JEV, running.bodies, received=lambda: config.requests
        )


@contextmanager
def ours(wire: str, state: Any = None) -> Iterator[Served]:
    """The tests' own decision server, on the System One or the OpenAI Decisions wire."""
    with decision_server.running(state) as running:
        if wire == "typesafe":
            env = without_otel(TYPESAFE_BASE_URL=running.url, TYPESAFE_API_KEY="k")
            served = Served("typesafe:jev-1.13.0", env, JEV)
        else:
            env = without_otel(OPENAI_BASE_URL=f"{running.url}/v1", OPENAI_API_KEY="k")
            served = Served("openai-decisions:gpt-6-luna", env, LUNA)
            running.model = "gpt-6-luna"
        served.bodies = running.requests
        served.received = lambda: len(running.requests)
        yield served


@pytest.fixture(params=["jevcompat", "openai-decisions"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    """Each wire's server: System One by jevcompat, OpenAI's Decisions by ours."""
    if request.param == "jevcompat":
        with jevcompat() as running:
            yield running
    else:
        with ours("openai-decisions") as running:
            yield running


def project(root: Path, judge_model: str, extra: str = "", *, one: bool = False) -> Path:
    """The example project (3 artifacts, policy and contract gates) judged by ``judge_model``;
    with ``one``, a suite of one artifact (labelled), where the artifacts' number is not what
    a test is about: every unsettled cell is re-asked a question per call, and they add up."""
    target = copy_example(root)
    (target / "canon.yaml").write_text(
        f"judge_model: {judge_model}\nconstitution_path: constitution.yaml\n"
        f"suite: suite.yaml\nbaselines_dir: baselines\njudge_cache: false\n{extra}"
    )
    if one:
        (target / "suite.yaml").write_text(ONE_ARTIFACT)
        (target / "suite.labels.jsonl").write_text(
            json.dumps({"id": "refund", "labels": {"G": "no"}}) + "\n"
        )
    return target


def canon(where: Path, served: Served, *args: str) -> subprocess.CompletedProcess[str]:
    """`canon ARGS --quiet` in a real process aimed at ``served``."""
    return run_canon(where, *args, "--quiet", env=served.env, timeout=60)


def usage_of(stdout: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(stdout)
    usage: dict[str, Any] = document["usage"]
    return usage


def assert_counted(served: Served, usage: dict[str, Any], before: int = 0) -> None:
    """Every request the server received since ``before`` is a call in ``usage``, priced."""
    assert usage["calls"] == served.received() - before
    assert usage["cost_usd"] == pytest.approx(usage["prompt_tokens"] * served.price, abs=1e-8)
    assert usage["prompt_tokens"] > 0


def test_score_accept_and_check_send_one_request_per_response_and_count_every_one(
    tmp_path: Path, served: Served
) -> None:
    where = project(tmp_path, served.judge_model)
    scored = canon(where, served, "score", "--format", "json")
    # a decision model alone on one response cannot confirm a failure it reads: exit 6 then
    assert scored.returncode in (ExitCode.OK, ExitCode.FAILED, ExitCode.INCONCLUSIVE)
    # one call per artifact asks every question in every wording; re-asks (if any) ask fewer
    assert served.full_calls() == len(ARTIFACTS)
    assert_counted(served, usage_of(scored.stdout))
    # the request the reply answers (from its trace) is part of what the judge sees
    assert any(REQUEST in json.dumps(body, ensure_ascii=False) for body in served.bodies)

    before = served.received()
    accepted = canon(where, served, "accept")
    assert accepted.returncode == ExitCode.OK, accepted.stderr
    assert served.full_calls() == 2 * len(ARTIFACTS)
    assert f"judge usage: {served.received() - before} call(s)" in accepted.stdout + accepted.stderr

    before = served.received()
    checked = canon(where, served, "check", "--format", "json")
    assert checked.returncode == ExitCode.OK, checked.stdout + checked.stderr
    assert served.full_calls() == 3 * len(ARTIFACTS)
    assert_counted(served, usage_of(checked.stdout), before)


def test_calibrate_sends_one_request_per_artifact_and_reports_no_flip_rate(
    tmp_path: Path, served: Served
) -> None:
    where = project(tmp_path, served.judge_model)
    constitution = constitution_from_file(where / "constitution.yaml")
    questions = len(load_rubric().questions_for(constitution))
    # every cell of the three artifacts is sampled: each artifact's call asks all of them
    cells = str(questions * len(ARTIFACTS))
    estimated = canon(
        where, served, "calibrate", "--cells", cells, "--estimate", "--format", "json"
    )
    assert estimated.returncode == ExitCode.OK and served.received() == 0, estimated.stderr
    found = canon(where, served, "calibrate", "--cells", cells, "--format", "json")
    assert found.returncode == ExitCode.OK, found.stderr
    assert served.received() == len(ARTIFACTS) == json.loads(estimated.stdout)["estimate"]["calls"]
    # every question in every wording (the check's call), plus the first wording re-ordered
    assert all(len(body["questions"]) > ASKED for body in served.bodies)
    document = json.loads(found.stdout)
    assert_counted(served, document["usage"])
    # a deterministic judge is never re-asked: no flip rate to report or recommend
    assert document["deterministic"] is True
    assert document["by_kind"] == {} and document["recommended_flip_rate"] is None
    assert "deterministic" in document["advice"]
    stability = document["paraphrase_stability"]
    assert {"gate", "facet", "principle"} <= set(stability)
    assert sum(t["answers"] for t in stability.values()) == ASKED * len(ARTIFACTS)
    assert document["failed_answers"] == 0

    text = run_canon(where, "calibrate", "--cells", "4", env=served.env, timeout=60)
    assert text.returncode == ExitCode.OK, text.stderr
    assert "recommended flip_rate: none" in text.stdout
    assert "the judge is deterministic" in text.stdout and "per question:" not in text.stdout


def test_align_sends_one_request_per_response_of_every_labelled_artifact(
    tmp_path: Path, served: Served
) -> None:
    where = project(tmp_path, served.judge_model)
    (where / "suite.yaml").write_text(REPLICATED)
    (where / "suite.labels.jsonl").write_text(LABELS)
    aligned = canon(where, served, "align", "--format", "json")
    assert aligned.returncode == ExitCode.OK, aligned.stderr
    # three artifacts of two responses each: six calls, each asking every question
    assert served.received() == 6 == served.full_calls()
    assert_counted(served, usage_of(aligned.stdout))


def test_rejudge_from_a_mock_baseline_to_a_decision_judge_then_check_with_it(
    tmp_path: Path, served: Served
) -> None:
    where = project(tmp_path, "mock:judge-script.yaml", one=True)
    assert canon(where, served, "accept").returncode == ExitCode.OK
    assert served.received() == 0  # the scripted judge asks no server

    compared = canon(where, served, "rejudge", "--judge", served.judge_model, "--format", "json")
    assert compared.returncode == ExitCode.OK, compared.stderr
    assert served.full_calls() == 1
    assert_counted(served, usage_of(compared.stdout))

    accepted = canon(where, served, "rejudge", "--judge", served.judge_model, "--accept")
    assert accepted.returncode == ExitCode.OK, accepted.stderr
    recorded = json.loads((where / "baselines" / "suite.json").read_text())
    assert recorded["judge"] == served.judge_model

    config = where / "canon.yaml"
    config.write_text(config.read_text().replace("mock:judge-script.yaml", served.judge_model))
    checked = canon(where, served, "check")
    assert checked.returncode == ExitCode.OK, checked.stdout + checked.stderr


def test_rejudge_from_an_llm_baseline_takes_none_of_the_llm_judges_options(tmp_path: Path) -> None:
    # judge_options of an LLM judge (max_tokens, reasons, batch) shape its text and how it
    # is sent; a decision judge has none, and rejudge must not hand them over as its own.
    with jevcompat() as served:
        where = project(tmp_path, "mock:judge-script.yaml", one=True)
        assert canon(where, served, "accept").returncode == ExitCode.OK
        config = where / "canon.yaml"
        config.write_text(
            config.read_text().replace("mock:judge-script.yaml", "openai:gpt-4o-mini")
            + "judge_options: {max_tokens: 64, reasons: false, batch: true}\n"
        )
        estimated = canon(where, served, "rejudge", "--judge", served.judge_model, "--estimate")
        assert estimated.returncode == ExitCode.OK, estimated.stderr
        compared = canon(where, served, "rejudge", "--judge", served.judge_model)
        assert compared.returncode == ExitCode.OK, compared.stderr
        assert served.full_calls() == 1


def test_batch_mode_with_a_decision_judge_is_refused_naming_the_wire(tmp_path: Path) -> None:
    with jevcompat() as served:
        where = project(tmp_path, served.judge_model, one=True)
        runs = [("score", "--batch"), ("score", "--batch", "--estimate")]
        for command in runs:
            result = canon(where, served, *command)
            assert result.returncode == ExitCode.USAGE_ERROR, (command, result.stderr)
            assert "no batch mode" in result.stderr and "typesafe" in result.stderr
        config = where / "canon.yaml"
        config.write_text(config.read_text() + "judge_options: {batch: true}\n")
        result = canon(where, served, "accept")
        assert result.returncode == ExitCode.USAGE_ERROR, result.stderr
        assert "no batch mode" in result.stderr and str(config) in result.stderr
        assert served.received() == 0


def test_without_a_key_against_the_hosted_api_nothing_is_sent_and_the_variable_is_named(
    tmp_path: Path,
) -> None:
    where = project(tmp_path, "typesafe:jev-1.13.0")
    env = {
        k: v
        for k, v in without_otel().items()
        if k not in ("TYPESAFE_API_KEY", "TYPESAFE_BASE_URL")
    }
    result = run_canon(where, "score", "--quiet", env=env, timeout=60)
    assert result.returncode == ExitCode.USAGE_ERROR, result.stderr
    assert "TYPESAFE_API_KEY" in result.stderr


@pytest.mark.parametrize(("given", "status"), [("wrong", "401"), ("", "403")])
def test_a_refused_key_is_exit_2_naming_the_variable(
    tmp_path: Path, given: str, status: str
) -> None:
    with jevcompat(key="right") as served:
        served.env["TYPESAFE_API_KEY"] = given
        result = canon(project(tmp_path, served.judge_model), served, "score")
    assert result.returncode == ExitCode.USAGE_ERROR, result.stderr
    assert f"HTTP {status}" in result.stderr and "TYPESAFE_API_KEY" in result.stderr


def test_a_422_is_exit_2_with_the_servers_own_message(tmp_path: Path) -> None:
    # jevcompat's strict-ids fault refuses question ids outside [A-Za-z0-9_] (Canon's ``G~w0``)
    with jevcompat(faults=frozenset({"strict-ids"})) as served:
        result = canon(project(tmp_path, served.judge_model), served, "score")
    assert result.returncode == ExitCode.USAGE_ERROR, result.stderr
    assert "HTTP 422" in result.stderr
    assert "Question id must match [A-Za-z0-9_]+" in result.stderr


def test_a_429_storm_is_retried_then_exit_3(tmp_path: Path) -> None:
    with jevcompat(busy_every=1) as served:
        where = project(tmp_path, served.judge_model, "judge_options: {max_attempts: 2}\n")
        result = canon(where, served, "score")
        assert result.returncode == ExitCode.JUDGE_UNAVAILABLE, result.stderr
        assert "unavailable" in result.stderr and "HTTP 429" in result.stderr
        assert served.received() >= 2  # asked again before giving up


@pytest.mark.parametrize("status", ["500", "529"])
def test_server_errors_are_retried_then_exit_3(tmp_path: Path, status: str) -> None:
    state = decision_server.DecisionServer(always=status)
    with ours("typesafe", state) as served:
        where = project(tmp_path, served.judge_model, "judge_options: {max_attempts: 2}\n")
        result = canon(where, served, "score")
        assert result.returncode == ExitCode.JUDGE_UNAVAILABLE, result.stderr
        assert f"HTTP {status}" in result.stderr
        assert served.received() >= 2


def _spoil_p1(reply: dict[str, Any]) -> dict[str, Any]:
    """Every wording of P1 answered with probabilities summing to about 1.2."""
    for qid, answer in reply["answers"].items():
        if qid.startswith("P1~"):
            answer["probabilities"] = {k: v + 0.1 for k, v in answer["probabilities"].items()}
    return reply


def test_a_malformed_answer_leaves_its_question_unscored_and_the_run_incomplete(
    tmp_path: Path,
) -> None:
    state = decision_server.DecisionServer(model="jev-1.13.0")
    with ours("typesafe", state) as served:
        where = project(tmp_path, served.judge_model, one=True)
        assert canon(where, served, "accept").returncode == ExitCode.OK
        state.tamper = _spoil_p1
        scored = canon(where, served, "score", "--format", "json")
        checked = canon(where, served, "check", "--format", "json")
    assert scored.returncode != ExitCode.OK, scored.stdout
    (artifact,) = json.loads(scored.stdout)["artifacts"]
    assert artifact["questions"]["P1"]["state"] == "unscored"
    assert artifact["canon"] is not True
    assert json.loads(scored.stdout)["summary"]["unscored_questions"] == 1
    assert checked.returncode == ExitCode.JUDGE_UNAVAILABLE, checked.stdout
    assert "INCOMPLETE" in checked.stdout and "CONFORMS" not in checked.stdout


def _refuse_p1(reply: dict[str, Any]) -> dict[str, Any]:
    """Every wording of P1 refused, as OpenAI's Decisions wire may refuse a question."""
    reply["answers"] = [
        {"type": "refusal", "name": a["name"]} if a["name"].startswith("P1~") else a
        for a in reply["answers"]
    ]
    return reply


def test_a_refused_question_is_a_refused_cell_never_an_answer(tmp_path: Path) -> None:
    state = decision_server.DecisionServer(tamper=_refuse_p1)
    with ours("openai-decisions", state) as served:
        scored = canon(
            project(tmp_path, served.judge_model, one=True), served, "score", "--format", "json"
        )
    document = json.loads(scored.stdout)
    (artifact,) = document["artifacts"]
    assert artifact["questions"]["P1"]["state"] == "refused"
    assert artifact["questions"]["P1"]["score"] is None
    assert document["summary"]["refused_questions"] == 1


def _violate_p1(reply: dict[str, Any]) -> dict[str, Any]:
    """Every wording of P1 read as plainly violated (System One), the rest as it was."""
    for qid, answer in reply["answers"].items():
        if qid.startswith("P1~"):
            names = list(answer["probabilities"])
            answer["probabilities"] = {n: (0.97 if n == "no" else 0.01) for n in names}
            answer["choice"] = "no"
    return reply


def test_a_violation_a_decision_model_alone_cannot_confirm_is_inconclusive_never_canon(
    tmp_path: Path,
) -> None:
    # One response, a deterministic judge, no confirm judge: every look at P1 reads it
    # violated, yet nothing in the run could confirm it. Not a failure, and not a pass:
    # exit 6 in every report, saying what would fix it.
    state = decision_server.DecisionServer(model="jev-1.13.0", tamper=_violate_p1)
    with ours("typesafe", state) as served:
        where = project(tmp_path, served.judge_model, one=True)
        text = canon(where, served, "score", "--junit-xml", "r.xml", "--html", "r.html")
        document = canon(where, served, "score", "--format", "json")
        github = canon(where, served, "score", "--format", "github")
    assert text.returncode == ExitCode.INCONCLUSIVE, text.stdout + text.stderr
    assert "INCONCLUSIVE" in text.stdout and "confirm_judge" in text.stdout
    assert "refund" in text.stdout.split("INCONCLUSIVE", 1)[1]
    assert document.returncode == ExitCode.INCONCLUSIVE
    (why,) = json.loads(document.stdout)["inconclusive"]
    assert "could have been confirmed" in why and "refund" in why
    junit = (where / "r.xml").read_text(encoding="utf-8")
    assert 'name="judge-noise"' in junit and 'type="inconclusive"' in junit
    assert 'id="banner">INCONCLUSIVE<' in (where / "r.html").read_text(encoding="utf-8")
    assert github.returncode == ExitCode.INCONCLUSIVE
    assert "::error title=Canon inconclusive::" in github.stdout


@pytest.mark.parametrize("command", ["align", "score"])
def test_a_decision_confirm_judge_answers_every_re_ask_about_a_response_in_one_call(
    tmp_path: Path, command: str
) -> None:
    # Jev screens (jevcompat), gpt-6-luna confirms (the tests' OpenAI Decisions server): the
    # cells tested side by side about one response go to the confirm judge as one call, so
    # its state is sent once per response, not once per cell.
    with jevcompat() as jev, ours("openai-decisions") as luna:
        where = project(tmp_path, jev.judge_model, "confirm_judge: openai-decisions:gpt-6-luna\n")
        (where / "suite.yaml").write_text(REPLICATED)
        (where / "suite.labels.jsonl").write_text(LABELS)
        env = {**jev.env, **luna.env}
        done = run_canon(where, command, "--format", "json", "--quiet", env=env, timeout=60)
        assert done.returncode in (ExitCode.OK, ExitCode.FAILED, ExitCode.INCONCLUSIVE), done.stderr
        asked = [len(body["questions"]) for body in luna.bodies]
        assert asked, "the confirm judge was never asked: nothing here tests the batching"
        # one call per response shown: three artifacts of two responses each
        assert len(asked) <= 6 < sum(asked), asked
        assert jev.full_calls() == 6  # the screen: one call per response


def test_a_confirm_judge_that_cannot_answer_leaves_the_run_incomplete_never_canon(
    tmp_path: Path,
) -> None:
    # Every call to the confirm judge fails (503 until the retries run out): the failures
    # Jev read can be neither confirmed nor cleared. They were reported "not counted as a
    # failure" and the artifacts canon (exit 0); the judge's failure is never a pass.
    down = decision_server.DecisionServer(always="503")
    with jevcompat() as jev, ours("openai-decisions", down) as luna:
        where = project(tmp_path, jev.judge_model, "confirm_judge: openai-decisions:gpt-6-luna\n")
        (where / "suite.yaml").write_text(REPLICATED)
        env = {**jev.env, **luna.env}
        done = run_canon(where, "score", "--quiet", env=env, timeout=60)
        assert luna.bodies, "the confirm judge was never asked: nothing here tests its failure"
        assert done.returncode == ExitCode.JUDGE_UNAVAILABLE, done.stdout + done.stderr
        assert "the judge was unavailable" in done.stderr
        assert "re-asking the judge failed" in done.stdout
        assert " canon " not in done.stdout.splitlines()[0]
        assert "INCOMPLETE" in done.stdout


def test_a_check_whose_confirm_judge_cannot_answer_is_incomplete_never_conforms(
    tmp_path: Path,
) -> None:
    # Accepted with both judges up; the agent's replies are reworded and the confirm judge is
    # down for the check: what Jev now reads on the changed replies can be neither confirmed
    # nor cleared, so the check cannot say CONFORMS (exit 3, the judge was unavailable).
    up = decision_server.DecisionServer()
    with jevcompat() as jev, ours("openai-decisions", up) as luna:
        where = project(tmp_path, jev.judge_model, "confirm_judge: openai-decisions:gpt-6-luna\n")
        (where / "suite.yaml").write_text(REPLICATED)
        env = {**jev.env, **luna.env}
        accepted = run_canon(where, "accept", "--quiet", env=env, timeout=60)
        assert accepted.returncode == ExitCode.OK, accepted.stdout + accepted.stderr
        (where / "suite.yaml").write_text(REPLICATED.replace("refunded", "have refunded"))
        asked = len(luna.bodies)
        up.always = "503"
        checked = run_canon(where, "check", "--quiet", env=env, timeout=60)
        assert len(luna.bodies) > asked, "the confirm judge was never asked in the check"
        assert checked.returncode == ExitCode.JUDGE_UNAVAILABLE, checked.stdout + checked.stderr
        assert "CONFORMS" not in checked.stdout


def _sound(body: dict[str, Any]) -> dict[str, Any]:
    """Every System One answer reads the reply as sound, at 0.97: honoured, no contradiction."""
    for qid, answer in body["answers"].items():
        labels = answer["probabilities"]
        good = "no" if qid.startswith("G~") else "yes"
        answer["probabilities"] = {
            label: 0.97 if label == good else 0.03 / (len(labels) - 1) for label in labels
        }
        answer["choice"], answer["confidence"] = good, 0.96
    return body


def test_a_decision_confirm_judge_is_not_asked_when_no_verdict_hangs_on_a_cell(
    tmp_path: Path,
) -> None:
    # Every answer reads the replies as sound (scores just below 1, above the threshold): no
    # failure to test, so the confirm judge is asked nothing, not one call per response.
    sound = decision_server.DecisionServer(tamper=_sound)
    with ours("typesafe", sound) as jev, ours("openai-decisions") as luna:
        where = project(tmp_path, jev.judge_model, "confirm_judge: openai-decisions:gpt-6-luna\n")
        (where / "suite.yaml").write_text(REPLICATED)
        env = {**jev.env, **luna.env}
        done = run_canon(where, "score", "--quiet", env=env, timeout=60)
        assert done.returncode == ExitCode.OK, done.stdout + done.stderr
        assert jev.full_calls() == 6 and luna.bodies == []

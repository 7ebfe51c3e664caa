"""A real model behind the System One wire: SmolLM2-135M (llama.cpp) answering typed
questions from its choice log-probabilities (support/llama_systemone.py), through the wire
client and through `canon score`, `accept` and `check` in real processes.

A 135M model is a weak judge: these tests prove the path (every answer valid, the same
request answered the same way, one call per response, usage counted), never what the
model concludes. One model server per module.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from canon import constitution_from_file
from canon.core.artifact import Artifact
from canon.core.scoring import Answer
from canon.errors import ExitCode
from canon.judge.decisions import systemone
from canon.judge.decisions.asking import asked_questions, decision_state
from canon.judge.decisions.validate import parse_body
from canon.project.store import load_rubric

from support.cli import copy_example, run_canon
from support.helper_modules import load_helper
from support.llama_systemone import LlamaSystemOne, running_systemone
from support.network import without_otel

local_model_server = load_helper("judge/local_model_server.py")
helpers = load_helper("judge/decisions/decision_helpers.py")

pytestmark = pytest.mark.slow

CONSTITUTION = (
    "mission: Resolve billing questions for customers of a small web host.\n"
    "principles:\n  - id: no-card-numbers\n    text: Never ask a customer for a full card number.\n"
)
SUITE = (
    "artifacts:\n  - id: card\n    input: Why was I charged twice this month?\n"
    "    text: Please send me your full card number so I can check the charge.\n"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaSystemOne]:
    """The System One server over a llama.cpp server of its own, for the module."""
    reason = local_model_server.missing_reason()
    if reason is not None:
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("llama-systemone") / "server.log"
    with (
        local_model_server.running_local_model(log, max_tokens=1) as model,
        running_systemone(LlamaSystemOne(model.base_url)) as server,
    ):
        yield server


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/v1/systemone", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        reply: dict[str, Any] = json.load(response)
    return reply


def test_every_answer_is_a_valid_distribution_and_the_same_request_gets_the_same_answer(
    served: LlamaSystemOne,
) -> None:
    rubric = load_rubric()
    bodies = []
    for text in (helpers.ARTIFACT.text, "I refunded the second charge."):
        state = decision_state(helpers.CONSTITUTION, Artifact(text))
        # the gate in all its wordings (yes/no) and one facet (yes/partly/no/n/a)
        questions = [
            q for q in rubric.questions_for(helpers.CONSTITUTION) if q.id in ("G", "mission")
        ]
        asked = asked_questions(questions, state)
        bodies.append((systemone.build("jev-1.13.0", state, asked), asked))
    (first, asked), (other, _) = bodies
    before = len(served.requests)
    replies = [_post(served.url, body) for body in (first, other, first)]
    assert len(served.requests) - before == 3  # one HTTP call per response

    reply = replies[0]
    assert reply["usage"]["input_tokens"] > 0 and reply["usage"]["output_tokens"] == 0
    read = systemone.read(parse_body(json.dumps(reply).encode()), asked)
    for item in asked:
        answer = read.outcomes[item.id]
        assert isinstance(answer, Answer), (item.id, answer)
        assert set(answer.distribution) == set(item.labels)
        assert sum(answer.distribution.values()) == pytest.approx(1.0)
        given = reply["answers"][item.id]
        assert abs(sum(given["probabilities"].values()) - 1.0) <= 0.01 * len(item.labels)
        assert given["choice"] in item.labels
    # deterministic: asked again after another state, the same request, the same answers
    assert replies[2]["answers"] == reply["answers"]


def _canon(where: Path, served: LlamaSystemOne, *args: str) -> subprocess.CompletedProcess[str]:
    env = without_otel(TYPESAFE_BASE_URL=served.url, TYPESAFE_API_KEY="local")
    return run_canon(where, *args, "--quiet", env=env, timeout=900)


def test_score_accept_and_check_through_the_local_model(
    served: LlamaSystemOne, tmp_path: Path
) -> None:
    where = copy_example(tmp_path)
    (where / "constitution.yaml").write_text(CONSTITUTION)
    (where / "one.yaml").write_text(SUITE)
    (where / "canon.yaml").write_text(
        "judge_model: typesafe:jev-1.13.0\nconstitution_path: constitution.yaml\n"
        "suite: one.yaml\nbaselines_dir: baselines\n"
        # one call asks ~20 questions of a model on one thread, and calls queue at its one
        # slot: far beyond the 10 s a hosted decision call is given
        "judge_options: {timeout: 900, max_attempts: 1}\n"
    )
    constitution = constitution_from_file(where / "constitution.yaml")
    asked = sum(len(q.wordings) + 1 for q in load_rubric().questions_for(constitution))
    before = len(served.requests)
    scored = _canon(where, served, "score", "--format", "json")
    assert scored.returncode in (ExitCode.OK, ExitCode.FAILED, ExitCode.INCONCLUSIVE), scored.stderr
    bodies = served.requests[before:]
    first = [body for body in bodies if len(body["questions"]) == asked]
    assert len(first) == 1  # one call for the one response; re-asks ask a question each
    document = json.loads(scored.stdout)
    (artifact,) = document["artifacts"]
    for qid, cell in artifact["questions"].items():
        assert cell["state"] != "unscored", (qid, cell)
    assert document["usage"]["calls"] == len(bodies)
    assert document["usage"]["prompt_tokens"] > 0

    accepted = _canon(where, served, "accept")
    assert accepted.returncode == ExitCode.OK, accepted.stderr
    # --no-cache: the check asks the model again, and the same requests get the same answers
    before = len(served.requests)
    checked = _canon(where, served, "check", "--no-cache")
    full = [body for body in served.requests[before:] if len(body["questions"]) == asked]
    assert full == first
    # the model is weak: its own disagreement may leave the check inconclusive, never failed
    assert checked.returncode in (ExitCode.OK, ExitCode.INCONCLUSIVE), checked.stdout

    # calibrate asks the model afresh; align and rejudge find the run's answers in the cache
    (where / "one.labels.jsonl").write_text(json.dumps({"id": "card", "labels": {"P1": "no"}}))
    for command in (
        ("calibrate", "--cells", "1", "--repeats", "2"),
        ("align",),
        ("rejudge", "--judge", "typesafe:jev-1.13.0"),
    ):
        before = len(served.requests)
        done = _canon(where, served, *command, "--format", "json")
        assert done.returncode == ExitCode.OK, (command, done.stderr)
        assert json.loads(done.stdout)["usage"]["calls"] == len(served.requests) - before

"""confirm_judge_options: a decision judge and an LLM confirm_judge, each with options of its
own, through `canon` in real processes against a decision server and a fake OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from canon.errors import ExitCode

from support.cli import copy_example, run_canon
from support.helper_modules import load_helper
from support.network import without_otel

decision_server = load_helper("judge/decisions/decision_server.py")

BASE = (
    "judge_model: typesafe:jev-1.13.0\nconfirm_judge: openai:fake-judge\n"
    "constitution_path: constitution.yaml\nsuite: one.yaml\njudge_cache: false\n"
)
ONE = "artifacts:\n  - id: card\n    text: Send me your full card number and I will look.\n"
DECISION_OPTIONS = "judge_options:\n  timeout: 5\n  max_attempts: 2\n"


def violated(body: dict[str, Any]) -> dict[str, Any]:
    """Every answer that offers "no" puts all its probability there: plain violations, which
    the confirm judge is asked about."""
    for answer in body["answers"].values():
        labels = answer["probabilities"]
        if "no" in labels:
            answer["probabilities"] = {label: float(label == "no") for label in labels}
            answer["choice"], answer["confidence"] = "no", 1.0
    return body


@pytest.fixture
def decisions() -> Iterator[Any]:
    with decision_server.running(decision_server.DecisionServer(tamper=violated)) as running:
        yield running


def project(root: Path, settings: str) -> Path:
    target = copy_example(root)
    (target / "canon.yaml").write_text(BASE + settings)
    (target / "one.yaml").write_text(ONE)
    return target


def canon(where: Path, decisions: Any, *args: str) -> Any:
    # the LLM's endpoint comes only from confirm_judge_options (no OPENAI_BASE_URL)
    env = without_otel(TYPESAFE_BASE_URL=decisions.url, TYPESAFE_API_KEY="k", OPENAI_API_KEY="k")
    env.pop("OPENAI_BASE_URL", None)
    return run_canon(where, *args, env=env, timeout=60)


def test_the_confirm_judge_takes_its_own_options_and_the_decision_judge_its_own(
    tmp_path: Path, decisions: Any, fake_llm: Any
) -> None:
    fake_llm.script("", "It asks for the full card number.\nANSWER: no")
    settings = (
        f"{DECISION_OPTIONS}confirm_judge_options:\n  api_base: {fake_llm.base_url}\n"
        "  reask_temperature: 1.3\n  max_tokens: 77\n"
    )
    where = project(tmp_path, settings)
    scored = canon(where, decisions, "score", "--format", "json")
    assert scored.returncode in (ExitCode.FAILED, ExitCode.INCONCLUSIVE), scored.stderr
    assert len(decisions.requests) == 1  # the decision judge: one call, every question
    # the LLM was asked at the endpoint, temperature and cap its own options give
    assert fake_llm.requests, scored.stdout
    assert {body["temperature"] for body in fake_llm.requests} == {1.3}
    assert {body["max_tokens"] for body in fake_llm.requests} == {77}
    assert "It asks for the full card number." in scored.stdout


def test_without_confirm_judge_options_judge_options_reach_both_judges(
    tmp_path: Path, decisions: Any, fake_llm: Any
) -> None:
    # the old behaviour: an LLM option in judge_options is refused by the decision judge
    where = project(tmp_path, f"{DECISION_OPTIONS}  reask_temperature: 1.3\n")
    refused = canon(where, decisions, "score")
    assert refused.returncode == ExitCode.USAGE_ERROR
    assert "canon.yaml: judge_options reask_temperature apply to LLM judges only" in (
        refused.stderr
    )
    assert not decisions.requests and not fake_llm.requests


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            "confirm_judge_options:\n  temperature: 0.2\n",
            "canon.yaml: confirm_judge: confirm_judge_options temperature apply to LLM judges "
            "only; a decision judge (typesafe:jev-1.13.0) takes",
        ),
        ("confirm_judge_options:\n  tempreature: 0.2\n", "unknown confirm judge option"),
        ("confirm_judge_options:\n  timeout: fast\n", "confirm judge option 'timeout' must be"),
        ("confirm_judge_options:\n  samples: 0\n", "'samples' must be between 1 and 100"),
        ("confirm_judge_options: [timeout]\n", "'confirm_judge_options' must be a mapping"),
        ("confirm_judge_options:\n  batch: true\n", "the confirm judge's looks are always"),
    ],
)
def test_wrong_confirm_judge_options_are_refused_naming_canon_yaml(
    tmp_path: Path, decisions: Any, settings: str, message: str
) -> None:
    where = project(tmp_path, settings)
    if "temperature: 0.2" in settings and "tempreature" not in settings:
        # a decision confirm judge refuses an LLM option by its setting's name
        config = where / "canon.yaml"
        config.write_text(config.read_text().replace("openai:fake-judge", "typesafe:jev-1.13.0"))
    refused = canon(where, decisions, "score")
    assert refused.returncode == ExitCode.USAGE_ERROR, refused.stdout
    assert "canon.yaml" in refused.stderr and message in refused.stderr
    assert not decisions.requests


def test_confirm_judge_options_without_a_confirm_judge_or_for_a_script_are_refused(
    tmp_path: Path, decisions: Any
) -> None:
    where = project(tmp_path, "confirm_judge_options:\n  timeout: 5\n")
    config = where / "canon.yaml"
    config.write_text(config.read_text().replace("confirm_judge: openai:fake-judge\n", ""))
    refused = canon(where, decisions, "score")
    assert refused.returncode == ExitCode.USAGE_ERROR
    assert "'confirm_judge_options' is set but 'confirm_judge' is not" in refused.stderr

    config.write_text(
        BASE.replace("openai:fake-judge", "mock:judge-script.yaml")
        + ("confirm_judge_options:\n  timeout: 5\n")
    )
    refused = canon(where, decisions, "score")
    assert refused.returncode == ExitCode.USAGE_ERROR
    assert "confirm_judge: confirm_judge_options (timeout) apply to model judges only" in (
        refused.stderr
    )


@pytest.mark.parametrize("confirm", [False, True])
def test_set_judge_to_a_decision_model_says_where_llm_options_belong(
    tmp_path: Path, confirm: bool
) -> None:
    config = tmp_path / "canon.yaml"
    second = "confirm_judge: openai:gpt-4o-mini\n" if confirm else ""
    config.write_text(f"judge_model: openai:gpt-4o\n{second}judge_options:\n  samples: 3\n")
    done = run_canon(tmp_path, "set-judge", "--provider", "typesafe", "--model", "jev-1.13.0")
    assert done.returncode == ExitCode.OK, done.stderr
    assert "judge_options samples in" in done.stderr
    moved = "move them to confirm_judge_options" in done.stderr
    assert moved == confirm and ("remove them" in done.stderr) != confirm

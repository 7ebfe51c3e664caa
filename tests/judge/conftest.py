"""Fixtures for the model-judge tests: a local fake OpenAI server and judges pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from canon.core.artifact import Artifact
from canon.core.constitution import Constitution
from canon.core.rubric import Question
from canon.judge.base import JudgeRequest
from canon.judge.litellm_judge import LiteLLMJudge
from canon.project.store import load_rubric

from support.helper_modules import load_helper
from support.model_judge import BIG_REFUND, MODEL_JUDGE, PRICED_JUDGE, model_project

batch_server = load_helper("judge/batch_server.py")
fake_llm_server = load_helper("judge/fake_llm_server.py")
local_model_server = load_helper("judge/local_model_server.py")


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """SmolLM2-135M served by llama.cpp with free output, for the session (or a skip)."""
    reason = local_model_server.missing_reason()
    if reason is not None:
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("local-model") / "server.log"
    # Room for a structured reply's reason (up to 200 characters: ~110 tokens of this model's
    # JSON) as well as the answer; a reply cut short mid-reason would be unreadable.
    with local_model_server.running_local_model(log, max_tokens=192) as model:
        yield model


@pytest.fixture
def fake_llm() -> Iterator[Any]:
    """A running fake OpenAI-compatible server on 127.0.0.1 (see fake_llm_server.py)."""
    with fake_llm_server.running_fake_llm() as state:
        yield state


@pytest.fixture
def fake_llm_env(monkeypatch: pytest.MonkeyPatch, fake_llm: Any) -> None:
    """Aim this process's OpenAI judge at the fake server (for in-process `canon` runs)."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture
def refund_project(tmp_path: Path) -> Path:
    """The example project judged by the fake model: one 640 EUR refund decided alone, no cache."""
    config = MODEL_JUDGE + "suite: one.yaml\njudge_cache: false\nbaselines_dir: baselines\n"
    return model_project(tmp_path, config, {"one.yaml": BIG_REFUND})


@pytest.fixture
def priced_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example project judged by gpt-4o-mini (litellm prices it), no gates, as the cwd."""
    target = model_project(tmp_path, PRICED_JUDGE + "suite: suite.yaml\n")
    monkeypatch.chdir(target)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("CANON_BATCH_POLL_SECONDS", "0.01")  # batch tests need not wait
    return target


@pytest.fixture
def batch_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A running fake server with the files and batches endpoints, the OpenAI judge aimed at it."""
    with batch_server.running_batch_server() as state:
        monkeypatch.setenv("OPENAI_BASE_URL", state.base_url)
        yield state


@pytest.fixture
def transport() -> str:
    """The judge's call path; test modules that cover both override this with params."""
    return "auto"


@pytest.fixture
def make_judge(fake_llm: Any, transport: str) -> Callable[..., LiteLLMJudge]:
    """Build a LiteLLMJudge aimed at the fake server, with test-sized backoff."""

    def build(**options: Any) -> LiteLLMJudge:
        settings: dict[str, Any] = {
            "api_base": fake_llm.base_url,
            "api_key": "sk-test-not-a-real-key",
            "backoff": 0.01,
            "max_backoff": 0.05,
            "timeout": 5,
            "transport": transport,
        }
        settings.update(options)
        return LiteLLMJudge("openai/fake-judge", **settings)

    return build


@pytest.fixture
def questions(constitution: Constitution) -> dict[str, Question]:
    """The rubric's questions for the example constitution, by id."""
    return {q.id: q for q in load_rubric().questions_for(constitution)}


@pytest.fixture
def ask(constitution: Constitution) -> Callable[[Question, str], JudgeRequest]:
    """Build the request a runner would send for one question about one artifact text."""
    instructions = load_rubric().instructions

    def build(question: Question, text: str = "I refunded the duplicate charge.") -> JudgeRequest:
        return JudgeRequest(question, Artifact(text), constitution, instructions)

    return build

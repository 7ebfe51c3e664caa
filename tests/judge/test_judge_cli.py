"""The model judge through real `canon` processes, and proof that nothing else loads litellm."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.cli import EXAMPLES, invoke_in, run_canon
from support.model_judge import MODEL_JUDGE, model_env, model_project
from support.network import closed_port


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The example project, with one artifact and a model judge in canon.yaml."""
    one = "artifacts:\n  - id: refund\n    text: I refunded the duplicate 19.99 EUR charge.\n"
    return model_project(tmp_path, MODEL_JUDGE + "suite: suite.yaml\n", {"one.yaml": one})


def test_canon_score_asks_the_configured_model_through_a_real_process(project, fake_llm):
    fake_llm.script("contradict any part", "No contradiction.\nANSWER: no")
    fake_llm.script("surface the tradeoff", "Nothing pulls apart.\nANSWER: n/a")
    fake_llm.script("", "ANSWER: yes")
    completed = run_canon(
        project, "score", "--quiet", "--format", "json", env=model_env(fake_llm.base_url)
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    document = json.loads(completed.stdout)
    assert document["summary"]["canon"] == 3
    assert document["artifacts"][0]["questions"]["tradeoff"]["state"] == "na"
    assert len(fake_llm.requests) == 30
    assert {body["model"] for body in fake_llm.requests} == {"fake-judge"}


def test_score_and_accept_exit_3_when_the_model_server_is_down(project):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test"}
    commands = {
        "score": ["score", "--quiet", "--format", "json", "--suite", "one.yaml"],
        "accept": ["accept", "--quiet", "--suite", "one.yaml"],
    }
    # Both at once: each spends most of its time importing litellm and backing off.
    running = {
        name: subprocess.Popen(
            [sys.executable, "-m", "canon.cli", *args],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, args in commands.items()
    }
    outputs = {name: process.communicate(timeout=60) for name, process in running.items()}

    stdout, stderr = outputs["score"]
    assert running["score"].returncode == 3, stderr
    # One line that says what happened and what to do; no traceback, no litellm banners.
    assert stderr.count("\n") == 1 and "the judge was unavailable" in stderr
    document = json.loads(stdout)
    assert document["summary"]["unscored_questions"] == 10
    error = document["artifacts"][0]["questions"]["mission"]["error"]
    assert "judge openai/fake-judge is unavailable" in error
    assert "could not reach the provider" in error

    stdout, stderr = outputs["accept"]
    assert running["accept"].returncode == 3
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canon: error: ")
    assert "unavailable" in lines[0] and "canon accept" in lines[0]
    assert not (project / "baselines").exists()


def _modules_after(code: str, cwd: Path) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; report whether litellm (or openai) got imported."""
    script = textwrap.dedent(code) + textwrap.dedent(
        """
        import json, sys
        print(json.dumps({name: name in sys.modules for name in ("litellm", "openai")}))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    loaded: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_canon_does_not_import_litellm(tmp_path):
    assert _modules_after(
        "import canon, canon.check.metric, canon.project.judge_factory", tmp_path
    ) == {
        "litellm": False,
        "openai": False,
    }


def test_canon_help_does_not_import_litellm(tmp_path):
    code = """
    from canon.cli import main
    try:
        main(["--help"])
    except SystemExit as exit:
        assert exit.code == 0
    """
    assert _modules_after(code, tmp_path) == {"litellm": False, "openai": False}


def test_a_mock_judge_run_does_not_import_litellm(tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "demo")
    code = """
    from canon.cli import main
    try:
        main(["score", "--quiet"])
    except SystemExit as exit:
        assert exit.code == 0, exit.code
    """
    assert _modules_after(code, tmp_path / "demo") == {"litellm": False, "openai": False}


def test_building_a_model_judge_does_not_import_litellm_until_it_is_asked(tmp_path):
    path = str(EXAMPLES / "constitution.yaml")
    code = f"""
    from canon import CoherenceMetric, constitution_from_file
    CoherenceMetric(constitution=constitution_from_file({path!r}), judge="openai:gpt-4o")
    """
    assert _modules_after(code, tmp_path) == {"litellm": False, "openai": False}


@pytest.mark.usefixtures("fake_llm_env")
def test_canon_score_in_process_reports_a_flaky_question_as_unscored(project, fake_llm):
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("serve the mission", "I would rather not say.")
    fake_llm.script("", "ANSWER: yes")
    result = invoke_in(project, "score", "--quiet", "--suite", "one.yaml")
    assert result.exit_code == 3, result.output
    assert "1 of 10 questions unscored (judge failed: mission)" in result.stdout
    summary = "0 canon, 0 non-canon, 1 incomplete (not judged), 1 unscored question(s)"
    assert summary in result.stdout


def test_an_unknown_provider_is_bad_config_with_one_line(project):
    (project / "canon.yaml").write_text(
        "judge_model: nosuchprovider:model-x\nconstitution_path: constitution.yaml\n"
    )
    result = invoke_in(project, "score", "--quiet", "--suite", "one.yaml")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not recognise the provider 'nosuchprovider'" in lines[0]


@pytest.mark.parametrize("command", ["score", "accept"])
def test_a_refused_key_is_exit_2_with_one_line_naming_the_variable(
    project, fake_llm, monkeypatch, command
):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-revoked")
    fake_llm.script("", always="401")
    result = invoke_in(project, command, "--quiet", "--suite", "one.yaml")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused the credentials" in lines[0]
    assert "OPENAI_API_KEY" in lines[0] and ".env next to canon.yaml" in lines[0]
    assert len(fake_llm.requests) == 1  # the first call, no retries
    assert not list(project.rglob("one.json"))  # accept wrote no baseline


@pytest.mark.usefixtures("fake_llm_env")
def test_a_model_that_ignores_the_format_is_exit_2_with_the_hint(project, fake_llm):
    fake_llm.script("", "Happy to help with billing!")
    result = invoke_in(project, "score", "--quiet", "--suite", "one.yaml")
    assert result.exit_code == 2, result.output
    assert "ignores the answer format" in result.stderr and "constrain_answers" in result.stderr


def test_judge_options_api_base_in_canon_yaml_aims_the_judge_at_that_endpoint(
    project, fake_llm, monkeypatch
):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (project / "canon.yaml").write_text(
        MODEL_JUDGE + f"suite: one.yaml\njudge_options:\n  api_base: {fake_llm.base_url}\n"
    )
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    result = invoke_in(project, "score", "--quiet")
    assert result.exit_code == 0, result.output
    assert len(fake_llm.requests) == 10  # every question went to the configured endpoint

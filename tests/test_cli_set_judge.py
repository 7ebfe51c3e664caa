"""``canon set-judge`` end to end: which file it edits, what it refuses, what it prints."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from canon.cli.set_judge import judge_spec, set_judge
from canon.errors import UsageError
from canon.project.config import load_config

from support.cli import one_error_line

CONFIG = (
    "# the project's config\n"
    "judge_model: mock:judge.yaml   # offline until we pick a model\n"
    "threshold: 0.8\n"
    "constitution_path: constitution.yaml\n"
)
COMMAND = "from canon.cli.set_judge import set_judge; set_judge()"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root holding canon.yaml, with an empty src/app subdirectory."""
    root = tmp_path / "project"
    (root / "src" / "app").mkdir(parents=True)
    (root / "canon.yaml").write_text(CONFIG, encoding="utf-8")
    return root


def _run(cwd: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(set_judge, list(args), catch_exceptions=False)


def test_set_judge_from_a_subdirectory_edits_the_discovered_canon_yaml(project, monkeypatch):
    result = _run(
        project / "src" / "app",
        "--provider",
        "openai",
        "--model",
        "gpt-5.6-luna",
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 0, result.output
    target = project / "canon.yaml"
    assert result.stdout == (
        f"judge_model set to openai:gpt-5.6-luna in {target} (was mock:judge.yaml)\n"
    )
    assert target.read_text(encoding="utf-8") == CONFIG.replace(
        "mock:judge.yaml", "openai:gpt-5.6-luna"
    )
    assert not (project / "src" / "app" / "canon.yaml").exists()
    for where in (project, project / "src" / "app"):
        config = load_config(cwd=where)
        assert config.source == target
        assert config.judge_model == "openai:gpt-5.6-luna"


def test_a_model_with_a_slash_and_an_uppercase_provider_is_stored_normalised(project, monkeypatch):
    result = _run(
        project,
        "--provider",
        " Together ",
        "--model",
        "deepseek-ai/DeepSeek-V4-Flash-0731",
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 0, result.output
    assert load_config(cwd=project).judge_model == "together:deepseek-ai/DeepSeek-V4-Flash-0731"


def test_the_mock_judge_form_is_accepted(project, monkeypatch):
    (project / "canon.yaml").write_text("judge_model: openai:gpt-4o\n", encoding="utf-8")
    result = _run(project, "--provider", "mock", "--model", "judge.yaml", monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert (project / "canon.yaml").read_text() == "judge_model: mock:judge.yaml\n"
    assert "(was openai:gpt-4o)" in result.stdout


def test_a_canon_yml_is_edited_just_like_a_canon_yaml(tmp_path, monkeypatch):
    (tmp_path / "canon.yml").write_text("threshold: 0.9\n", encoding="utf-8")
    result = _run(tmp_path, "--provider", "openai", "--model", "gpt-4o", monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert "(was not set)" in result.stdout
    assert (tmp_path / "canon.yml").read_text() == "threshold: 0.9\njudge_model: openai:gpt-4o\n"
    assert not (tmp_path / "canon.yaml").exists()
    assert load_config(cwd=tmp_path).judge_model == "openai:gpt-4o"


def test_with_no_config_anywhere_a_canon_yaml_is_created_here(tmp_path, monkeypatch):
    # A pyproject.toml without [tool.canon] is not a Canon config.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n', encoding="utf-8")
    result = _run(tmp_path, "--provider", "openai", "--model", "gpt-4o", monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    created = tmp_path / "canon.yaml"
    assert created.read_text() == "judge_model: openai:gpt-4o\n"
    assert f"in {created} (new file:" in result.stdout
    assert load_config(cwd=tmp_path).judge_model == "openai:gpt-4o"


def test_setting_the_same_model_again_leaves_the_file_alone(project, monkeypatch):
    path = project / "canon.yaml"
    path.write_text("judge_model: 'openai:gpt-4o'  # mine\n", encoding="utf-8")
    os.utime(path, (1_000_000, 1_000_000))
    result = _run(project, "--provider", "openai", "--model", "gpt-4o", monkeypatch=monkeypatch)
    assert result.exit_code == 0
    assert "already openai:gpt-4o" in result.stdout and "nothing changed" in result.stdout
    assert path.read_text() == "judge_model: 'openai:gpt-4o'  # mine\n"
    assert path.stat().st_mtime == 1_000_000


def test_the_edit_keeps_crlf_endings_and_the_file_mode(project, monkeypatch):
    path = project / "canon.yaml"
    path.write_bytes(b"threshold: 0.8\r\njudge_model: a:b  # x\r\n")
    path.chmod(0o640)
    result = _run(project, "--provider", "openai", "--model", "gpt-4o", monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == b"threshold: 0.8\r\njudge_model: openai:gpt-4o  # x\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_symlinked_canon_yaml_is_edited_through_the_link(project, monkeypatch):
    real = project / "configs" / "canon.yaml"
    real.parent.mkdir()
    (project / "canon.yaml").rename(real)
    (project / "canon.yaml").symlink_to(real)
    result = _run(project, "--provider", "openai", "--model", "gpt-4o", monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert (project / "canon.yaml").is_symlink()
    assert "judge_model: openai:gpt-4o" in real.read_text()


def test_a_project_configured_in_pyproject_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.canon]\nthreshold = 0.9\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    result = _run(
        tmp_path / "sub", "--provider", "openai", "--model", "gpt-4o", monkeypatch=monkeypatch
    )
    assert result.exit_code == 2
    line = one_error_line(result)
    assert str(pyproject) in line and "[tool.canon]" in line
    assert 'judge_model = "openai:gpt-4o"' in line
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["pyproject.toml", "sub"]


def test_config_option_edits_the_named_file_and_not_the_discovered_one(
    project, tmp_path, monkeypatch
):
    other = tmp_path / "ci" / "canon-ci.yaml"
    other.parent.mkdir()
    other.write_text("threshold: 0.95\n", encoding="utf-8")
    result = _run(
        project,
        "--config",
        "../ci/canon-ci.yaml",
        "--provider",
        "openai",
        "--model",
        "gpt-4o",
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 0, result.output
    assert other.read_text() == "threshold: 0.95\njudge_model: openai:gpt-4o\n"
    assert (project / "canon.yaml").read_text() == CONFIG
    assert load_config(Path("../ci/canon-ci.yaml"), cwd=project).judge_model == "openai:gpt-4o"


def test_config_option_naming_a_missing_file_is_an_error_not_a_creation(project, monkeypatch):
    result = _run(
        project,
        "--config",
        "nope.yaml",
        "--provider",
        "openai",
        "--model",
        "gpt-4o",
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 2
    assert "config file not found: nope.yaml" in one_error_line(result)
    assert not (project / "nope.yaml").exists()


def test_config_option_naming_a_pyproject_is_refused(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.canon]\n", encoding="utf-8")
    result = _run(
        tmp_path,
        "--config",
        "pyproject.toml",
        "--provider",
        "openai",
        "--model",
        "gpt-4o",
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 2
    assert "under [tool.canon]" in one_error_line(result)
    assert not (tmp_path / "canon.yaml").exists()


@pytest.mark.parametrize(
    ("provider", "model", "message"),
    [
        ("", "gpt-4o", "--provider is empty"),
        ("   ", "gpt-4o", "--provider is empty"),
        ("openai", "", "--model is empty"),
        ("openai", "  ", "--model is empty"),
        ("openai:gpt", "4o", "holds ':' or '/'"),
        ("together/deepseek-ai", "x", "holds ':' or '/'"),
        ("open ai", "gpt-4o", "does not make a provider:model"),
        ("openai", "gpt 4o", "does not make a provider:model"),
        ("openai", "/gpt-4o", "does not make a provider:model"),
        ("-openai", "gpt-4o", "does not make a provider:model"),
        ("mock", "two\nlines.yaml", "must be one line"),
    ],
)
def test_a_bad_provider_or_model_exits_2_with_the_expected_form(
    project, monkeypatch, provider, model, message
):
    result = _run(project, "--provider", provider, "--model", model, monkeypatch=monkeypatch)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert message in line
    assert (project / "canon.yaml").read_text() == CONFIG


def test_judge_spec_lowercases_the_provider_and_keeps_the_model_as_given():
    assert judge_spec("OpenAI", "GPT-4o") == "openai:GPT-4o"
    assert judge_spec("mock", "my script.yaml") == "mock:my script.yaml"
    with pytest.raises(UsageError, match=re.escape("e.g. --provider openai --model gpt-5.6-luna")):
        judge_spec("openai", "gpt 4o")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"judge_model: |\n  openai:gpt-4o\n", "spans several lines"),
        (b"judge_model: a:b\njudge_model: c:d\n", "set more than once (lines 1 and 2)"),
        (b"- threshold: 0.8\n", "expected a mapping of settings"),
        (b"threshold: [0.8\n", "not valid YAML"),
        (b"threshold: \xff\n", "not UTF-8 text"),
    ],
)
def test_a_config_that_cannot_be_edited_safely_is_left_untouched(
    project, monkeypatch, content, message
):
    path = project / "canon.yaml"
    path.write_bytes(content)
    result = _run(project, "--provider", "openai", "--model", "gpt-4o", monkeypatch=monkeypatch)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert message in line and str(path) in line
    assert path.read_bytes() == content


def test_an_unreadable_config_is_reported_not_raised(project, monkeypatch):
    path = project / "canon.yaml"
    real_open = os.open

    def refuse(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # chmod 0 does not stop root (CI runs as root), so the OS refusal is injected
        if Path(file).resolve() == path.resolve():
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, flags, *args, **kwargs)

    before = path.read_bytes()
    monkeypatch.setattr(os, "open", refuse)
    result = _run(project, "--provider", "openai", "--model", "x", monkeypatch=monkeypatch)
    monkeypatch.undo()
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "cannot be read" in line and "Permission denied" in line
    assert path.read_bytes() == before


def test_help_explains_discovery_the_pyproject_refusal_and_the_model_form():
    result = CliRunner().invoke(set_judge, ["--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for phrase in ("walking up", "[tool.canon]", "--config", "org/model", "mock", "created"):
        assert phrase in text


def _subprocess(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", COMMAND, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_real_process_sets_the_judge_and_canon_reads_it_back(project):
    done = _subprocess(project / "src", "--provider", "anthropic", "--model", "claude-x")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("judge_model set to anthropic:claude-x in ")
    assert load_config(cwd=project / "src").judge_model == "anthropic:claude-x"


def test_a_real_process_reports_a_refusal_on_one_stderr_line_with_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.canon]\n", encoding="utf-8")
    done = _subprocess(tmp_path, "--provider", "openai", "--model", "gpt-4o")
    assert done.returncode == 2
    assert done.stderr.startswith("canon: error: ") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_the_command_never_imports_litellm_or_scipy(project):
    probe = (
        "import sys\n"
        "from canon.cli.set_judge import set_judge\n"
        "try:\n"
        "    set_judge(['--provider', 'openai', '--model', 'gpt-4o'])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'scipy'))\n"
        "print('heavy:', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "heavy: []" in done.stdout
    assert "openai:gpt-4o" in (project / "canon.yaml").read_text()


def test_switching_to_a_decision_judge_names_the_llm_options_it_will_refuse(project, monkeypatch):
    config = project / "canon.yaml"
    config.write_text(CONFIG + "judge_options:\n  timeout: 20\n  reasons: false\n  samples: 3\n")
    result = _run(
        project, "--provider", "typesafe", "--model", "jev-1.13.0", monkeypatch=monkeypatch
    )
    assert result.exit_code == 0, result.output
    assert "judge_model: typesafe:jev-1.13.0" in config.read_text(encoding="utf-8")
    assert "judge_options reasons, samples in" in result.stderr  # timeout is one it takes
    quiet = _run(project, "--provider", "openai", "--model", "gpt-4o", monkeypatch=monkeypatch)
    assert quiet.exit_code == 0 and quiet.stderr == ""

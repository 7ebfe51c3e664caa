"""`otel:` in canon.yaml, and which of flag, CANON_OTEL and canon.yaml decides.

The commands run as real processes against the OTLP/HTTP receiver the tests start on
127.0.0.1 (``otlp_receiver.py``); the precedence table is checked on its pure function.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.core import ParameterSource

from canon.cli.telemetry import OtelChoice, otel_choice
from canon.errors import ConfigError
from canon.project.config import load_config

from support.cli import copy_example, run_canon
from support.network import closed_port, without_otel

REPO = Path(__file__).resolve().parents[2]
EVENTS_PER_RUN = 36  # the example suite's three artifacts: verdict, gates and answers


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The bundled example project with its accepted baseline."""
    target = copy_example(tmp_path)
    shutil.copytree(REPO / "baselines", target / "baselines")
    return target


def _with_otel(project: Path, value: str) -> None:
    config = project / "canon.yaml"
    config.write_text(config.read_text() + f"otel: {value}\n")


def _canon(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_canon(project, *args, env=without_otel(**env))


def test_otel_true_in_canon_yaml_sends_without_the_flag(project, receiver):
    _with_otel(project, "true")
    completed = _canon(project, "score", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
    assert completed.returncode == 0, completed.stderr
    assert len(receiver.records) == EVENTS_PER_RUN
    assert len(receiver.named("canon.verdict")) == 3
    assert f"sent {EVENTS_PER_RUN} gen_ai.evaluation.result event(s)" in completed.stderr


def test_otel_true_in_canon_yaml_sends_from_canon_check_too(project, receiver):
    _with_otel(project, "true")
    completed = _canon(project, "check", "--quiet", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
    assert completed.returncode == 0, completed.stderr
    assert len(receiver.named("canon.check")) == 1


@pytest.mark.parametrize(
    ("setting", "args", "env"),
    [
        ("true", ["--no-otel"], {}),  # the flag beats canon.yaml
        ("true", [], {"CANON_OTEL": "0"}),  # the environment beats canon.yaml
        ("strict", [], {"CANON_OTEL": "false"}),
        ("false", [], {}),
    ],
    ids=["no-otel-flag", "canon-otel-0", "canon-otel-false-over-strict", "false"],
)
def test_a_run_told_not_to_send_sends_nothing(project, receiver, setting, args, env):
    _with_otel(project, setting)
    completed = _canon(
        project, "score", *args, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, **env
    )
    assert completed.returncode == 0, completed.stderr
    assert receiver.records == []
    assert "otel" not in completed.stderr


@pytest.mark.parametrize(
    ("setting", "args", "env"),
    [
        ("false", ["--otel"], {}),  # the flag beats canon.yaml
        ("false", [], {"CANON_OTEL": "1"}),  # the environment beats canon.yaml
        ("true", ["--otel"], {"CANON_OTEL": "0"}),  # the flag beats the environment
    ],
    ids=["otel-flag", "canon-otel-1", "flag-over-env"],
)
def test_a_run_told_to_send_sends(project, receiver, setting, args, env):
    _with_otel(project, setting)
    completed = _canon(
        project, "score", "--quiet", *args, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, **env
    )
    assert completed.returncode == 0, completed.stderr
    assert len(receiver.records) == EVENTS_PER_RUN


def _unreachable() -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{closed_port()}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
    }


def test_otel_strict_in_canon_yaml_makes_a_failed_send_exit_3(project):
    _with_otel(project, "strict")
    completed = _canon(project, "score", "--quiet", **_unreachable())
    assert completed.returncode == 3
    (line,) = completed.stderr.strip().splitlines()
    assert line.startswith("canon: error: the OTLP endpoint http://127.0.0.1:")


def test_otel_true_in_canon_yaml_keeps_a_failed_send_a_warning(project):
    _with_otel(project, "true")
    completed = _canon(project, "score", "--quiet", **_unreachable())
    assert completed.returncode == 0
    assert completed.stderr.startswith("canon: warning: the OTLP endpoint")


@pytest.mark.parametrize("value", ["1", "sometimes", "{enabled: true}", "[true]"])
def test_a_bad_otel_value_is_exit_2_naming_canon_yaml(project, value):
    _with_otel(project, value)
    completed = _canon(project, "score")
    assert completed.returncode == 2
    assert completed.stdout == ""
    (line,) = completed.stderr.strip().splitlines()
    assert line.startswith(f"canon: error: {project / 'canon.yaml'}: 'otel' must be true, false")
    assert "got" in line


def test_a_bad_canon_otel_variable_is_a_usage_error(project):
    completed = _canon(project, "score", CANON_OTEL="maybe")
    assert completed.returncode == 2
    assert "CANON_OTEL" in completed.stderr or "--otel" in completed.stderr
    assert completed.stdout == ""


def test_the_setting_is_read_from_canon_yaml_and_pyproject(tmp_path):
    yaml_project = tmp_path / "yaml"
    yaml_project.mkdir()
    (yaml_project / "canon.yaml").write_text("otel: strict\n")
    assert load_config(cwd=yaml_project).otel == "strict"
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text("[tool.canon]\notel = true\n")
    assert load_config(cwd=other).otel == "on"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert load_config(cwd=empty, required=False).otel == "off"
    (other / "pyproject.toml").write_text('[tool.canon]\notel = "on"\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml: 'otel' must be true, false or strict"):
        load_config(cwd=other)


GIVEN, ENV, DEFAULT = ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT, None


@pytest.mark.parametrize(
    ("flag", "flag_source", "strict", "strict_source", "mode"),
    [
        (False, DEFAULT, False, DEFAULT, None),  # nothing said: canon.yaml decides
        (True, GIVEN, False, DEFAULT, "on"),
        (False, GIVEN, True, ENV, "off"),  # --no-otel beats CANON_OTEL_STRICT=1
        (True, GIVEN, True, ENV, "strict"),  # --otel with CANON_OTEL_STRICT=1, as before
        (False, DEFAULT, True, GIVEN, "strict"),
        (True, ENV, False, DEFAULT, "on"),
        (False, ENV, False, DEFAULT, "off"),
        (False, ENV, True, ENV, "strict"),  # CANON_OTEL_STRICT=1 implies sending
        (False, DEFAULT, False, ENV, None),  # CANON_OTEL_STRICT=0 alone says nothing
    ],
)
def test_the_command_line_decides_then_the_environment(
    flag, flag_source, strict, strict_source, mode
):
    assert otel_choice(flag, flag_source, strict, strict_source) == OtelChoice(mode)

from __future__ import annotations

import os
from pathlib import Path

import pytest

from canon.errors import ConfigError, RubricOverrideError
from canon.project.config import discover_config_file, load_config, load_env_files


def test_discovery_walks_up_and_resolves_paths_against_the_config(write, tmp_path):
    write("proj/canon.yaml", "constitution_path: c.yaml\nbaselines_dir: base\nthreshold: 0.9\n")
    deep = tmp_path / "proj" / "a" / "b"
    deep.mkdir(parents=True)
    config = load_config(cwd=deep)
    assert config.source == (tmp_path / "proj" / "canon.yaml").resolve()
    assert config.constitution_path == (tmp_path / "proj" / "c.yaml").resolve()
    assert config.baselines_dir == (tmp_path / "proj" / "base").resolve()
    assert config.threshold == 0.9 and config.tolerance == 0.02


def test_first_config_found_wins_and_yml_works(write, tmp_path):
    write("outer/canon.yaml", "threshold: 0.5\n")
    write("outer/inner/canon.yml", "threshold: 0.7\n")
    assert load_config(cwd=tmp_path / "outer" / "inner").threshold == 0.7


def test_pyproject_counts_only_with_a_tool_canon_table(write, tmp_path):
    write("outer/pyproject.toml", "[tool.canon]\nthreshold = 0.6\n")
    write("outer/inner/pyproject.toml", "[project]\nname = 'x'\n")
    found = discover_config_file((tmp_path / "outer" / "inner").resolve())
    assert found == (tmp_path / "outer" / "pyproject.toml").resolve()
    assert load_config(cwd=tmp_path / "outer" / "inner").threshold == 0.6


def test_an_explicit_config_keeps_relative_paths_relative_to_the_current_directory(write, tmp_path):
    write("elsewhere/ci.yaml", "constitution_path: c.yaml\n")
    here = tmp_path / "here"
    here.mkdir()
    config = load_config(Path("../elsewhere/ci.yaml"), cwd=here)
    assert config.constitution_path == here.resolve() / "c.yaml"


def test_no_config_is_an_error_that_says_how_to_start_a_project(tmp_path):
    with pytest.raises(ConfigError, match=r"no canon.yaml .* run `canon init` to start"):
        load_config(cwd=tmp_path)


def test_no_config_gives_defaults_when_one_is_not_required(tmp_path):
    config = load_config(cwd=tmp_path, required=False)
    assert config.source is None
    assert config.threshold == 0.85
    assert config.baselines_dir == tmp_path.resolve() / "canon" / "baselines"


def test_a_rubric_key_is_refused_with_the_reason(write, tmp_path):
    write("canon.yaml", "rubric: mine.yaml\n")
    with pytest.raises(RubricOverrideError, match="fixed, versioned rubric"):
        load_config(cwd=tmp_path)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("threshhold: 0.9\n", "unknown setting(s) 'threshhold'"),
        ("threshold: 2\n", "'threshold' must be a number in [0, 1]"),
        ("tolerance: lots\n", "'tolerance' must be a number in [0, 1]"),
        ("judge_model: 3\n", "'judge_model' must be non-empty text"),
        ("concurrency: 0\n", "'concurrency' must be a whole number"),
        ("- a\n- b\n", "expected a mapping of settings"),
        ("threshold: [\n", "not valid YAML"),
    ],
)
def test_bad_config_values_are_config_errors(write, tmp_path, text, fragment):
    write("canon.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    assert fragment in str(info.value)


def test_a_missing_explicit_config_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(Path("nope.yaml"), cwd=tmp_path)


def test_a_broken_pyproject_named_explicitly_is_an_error(write, tmp_path):
    write("pyproject.toml", "[tool.canon\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(Path("pyproject.toml"), cwd=tmp_path)
    write("pyproject.toml", "[project]\nname='x'\n")
    with pytest.raises(ConfigError, match=r"has no \[tool.canon\] table"):
        load_config(Path("pyproject.toml"), cwd=tmp_path)


def test_env_files_layer_in_order_and_exported_variables_win(write, tmp_path):
    write(".env", "A=env\nB=env\nC=env\nD=env\n")
    write(".env.staging", "B=staging\nC=staging\n")
    write(".env.local", "C=local\n")
    environ = {"APP_ENV": "staging", "D": "shell"}
    applied = load_env_files(tmp_path, environ)
    assert environ == {"APP_ENV": "staging", "A": "env", "B": "staging", "C": "local", "D": "shell"}
    assert "D" not in applied


def test_env_for_another_app_env_is_not_read(write, tmp_path):
    write(".env.production", "A=prod\n")
    environ: dict[str, str] = {}
    load_env_files(tmp_path, environ)
    assert environ == {}


def test_judge_options_are_read_and_type_checked(write, tmp_path):
    write(
        "canon.yaml", "judge_options:\n  samples: 5\n  temperature: 1\n  constrain_answers: true\n"
    )
    assert load_config(cwd=tmp_path).judge_options == {
        "samples": 5,
        "temperature": 1,
        "constrain_answers": True,
    }
    write("canon.yaml", "judge_options:\n  samples: auto\n")
    assert load_config(cwd=tmp_path).judge_options == {"samples": "auto"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("judge_options: fast\n", "'judge_options' must be a mapping"),
        ("judge_options: {sample: 3}\n", "unknown judge option 'sample'"),
        ("judge_options: {samples: 2.5}\n", "judge option 'samples' must be a whole number"),
        ("judge_options: {samples: true}\n", "judge option 'samples' must be a whole number"),
        ("judge_options: {samples: many}\n", "'samples' must be a whole number or auto"),
        ("judge_options: {timeout: fast}\n", "judge option 'timeout' must be a number"),
        ("judge_options: {constrain_answers: 1}\n", "'constrain_answers' must be true or false"),
    ],
)
def test_bad_judge_options_are_config_errors(write, tmp_path, text, fragment):
    write("canon.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    assert fragment in str(info.value)


def test_the_judge_cache_defaults_to_the_project_folder_and_can_be_moved_or_turned_off(
    write, tmp_path
):
    write("proj/canon.yaml", "threshold: 0.9\n")
    assert load_config(cwd=tmp_path / "proj").judge_cache == (
        tmp_path / "proj" / ".canon" / "judge-cache.sqlite3"
    )
    write("proj/canon.yaml", "judge_cache: false\n")
    assert load_config(cwd=tmp_path / "proj").judge_cache is None
    write("proj/canon.yaml", "judge_cache: true\n")
    assert load_config(cwd=tmp_path / "proj").judge_cache == (
        tmp_path / "proj" / ".canon" / "judge-cache.sqlite3"
    )
    write("proj/canon.yaml", "judge_cache: cache/answers.db\n")
    assert load_config(cwd=tmp_path / "proj").judge_cache == tmp_path / "proj/cache/answers.db"


@pytest.mark.parametrize("value", ["0", "1.5", "''", "[a]", "{a: 1}"])
def test_a_judge_cache_that_is_neither_a_switch_nor_a_path_is_a_config_error(
    write, tmp_path, value
):
    write("proj/canon.yaml", f"judge_cache: {value}\n")
    with pytest.raises(ConfigError, match="judge_cache"):
        load_config(cwd=tmp_path / "proj")


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("threshhold: 0.9\n", "(did you mean 'threshold'?)"),
        ("judge-model: openai:gpt-4o\n", "(did you mean 'judge_model'?)"),
        ("baseline_dir: b\n", "(did you mean 'baselines_dir'?)"),
        (
            "sute: s.yaml\ntolerence: 0.1\n",
            "(did you mean: 'sute' -> 'suite', 'tolerence' -> 'tolerance'?)",
        ),
        ("judge_options:\n  sample: 3\n", "option 'sample' (did you mean 'samples'?)"),
    ],
)
def test_an_unknown_key_close_to_a_known_one_gets_a_did_you_mean(write, tmp_path, text, suggestion):
    write("canon.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    assert suggestion in str(info.value)


def test_an_unknown_key_like_no_known_one_gets_no_guess(write, tmp_path):
    write("canon.yaml", "flux_capacitor: 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    assert "did you mean" not in str(info.value)
    assert "known settings are allow_outside_paths, alpha, baselines_dir" in str(info.value)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_tokens", -5),
        ("max_tokens", 0),
        ("timeout", 1e308),
        ("timeout", 0),
        ("timeout", float("nan")),
        ("samples", 0),
        ("samples", 10_000),
        ("temperature", -0.5),
        ("max_attempts", 0),
        ("reask_temperature", 5),
        ("reask_temperature", -1),
        ("api_base", "localhost:8080/v1"),
        ("api_base", 8080),
    ],
)
def test_absurd_judge_options_are_refused_naming_the_key(tmp_path, option, value):
    from canon.project.config import config_from_mapping

    with pytest.raises(ConfigError, match=rf"canon\.yaml: judge option '{option}' must be"):
        config_from_mapping(
            {"judge_options": {option: value}},
            source=tmp_path / "canon.yaml",
            base_dir=tmp_path,
        )


def test_sensible_judge_options_are_kept(tmp_path):
    from canon.project.config import config_from_mapping

    options = {
        "max_tokens": 512,
        "timeout": 60.0,
        "samples": 5,
        "temperature": 0.7,
        "reask_temperature": 1.2,
        "api_base": "http://127.0.0.1:8080/v1",
    }
    config = config_from_mapping(
        {"judge_options": options}, source=tmp_path / "canon.yaml", base_dir=tmp_path
    )
    assert config.judge_options == options


def test_allow_outside_paths_must_be_true_or_false(tmp_path):
    from canon.project.config import config_from_mapping

    source = tmp_path / "canon.yaml"
    assert not config_from_mapping({}, source=source, base_dir=tmp_path).allow_outside_paths
    config = config_from_mapping({"allow_outside_paths": True}, source=source, base_dir=tmp_path)
    assert config.allow_outside_paths
    with pytest.raises(ConfigError, match="'allow_outside_paths' must be true or false"):
        config_from_mapping({"allow_outside_paths": "yes"}, source=source, base_dir=tmp_path)


def test_project_roots_hold_the_config_directory_and_where_paths_resolve(tmp_path):
    from canon.project.config import load_config

    elsewhere = tmp_path / "ci"
    elsewhere.mkdir()
    (elsewhere / "canon.yaml").write_text("threshold: 0.9\n")
    project = tmp_path / "project"
    project.mkdir()
    config = load_config(Path("../ci/canon.yaml"), cwd=project)
    assert config.project_roots == (project.resolve(), elsewhere.resolve())


def test_a_dangling_canon_yaml_symlink_is_an_error_during_discovery(tmp_path):
    from canon.project.config import discover_config_file

    os.symlink("missing.yaml", tmp_path / "canon.yaml")
    with pytest.raises(ConfigError, match=r"canon\.yaml: config file is a broken symlink"):
        discover_config_file(tmp_path)


def test_an_env_file_that_is_not_utf8_is_a_config_error_naming_it(tmp_path):
    from canon.project.config import load_env_files

    (tmp_path / ".env").write_bytes(b"KEY=\xff\n")
    environ: dict[str, str] = {}
    with pytest.raises(ConfigError, match=r"\.env: environment file is not UTF-8"):
        load_env_files(tmp_path, environ)
    assert environ == {}
    (tmp_path / ".env").write_text("KEY=value\n")
    assert load_env_files(tmp_path, environ) == {"KEY": "value"}

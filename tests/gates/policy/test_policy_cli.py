"""The ``canon policy`` command line contract, through CliRunner and real subprocesses."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from canon.cli import main

POLICY = {
    "schema_version": "1.0",
    "policy_id": "release-gate",
    "rules": [
        {"rule_id": "decision", "kind": "equals", "path": "decision", "value": "approve"},
        {"rule_id": "not-blocked", "kind": "false", "path": "blocked"},
    ],
}
PASSING = {"decision": "approve", "blocked": False}
FAILING = {"decision": "reject", "blocked": False}


def write(path: Path, value: Any) -> str:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    return {
        "policy": write(tmp_path / "policy.json", POLICY),
        "passing": write(tmp_path / "passing.json", PASSING),
        "failing": write(tmp_path / "failing.json", FAILING),
        "array": write(tmp_path / "array.json", [1]),
        "bad_policy": write(tmp_path / "bad.json", {**POLICY, "rules": [{"kind": "nope"}]}),
        "eight": write(
            tmp_path / "eight.json",
            {
                **POLICY,
                "rules": [
                    {"rule_id": f"r{i}", "kind": "required_field", "path": f"p{i}"}
                    for i in range(8)
                ],
            },
        ),
        "missing": str(tmp_path / "absent.json"),
        "dir": str(tmp_path),
    }


def run(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, ["policy", *args], input=stdin)


def ok(result: Result, exit_code: int = 0) -> Any:
    assert result.exit_code == exit_code, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def error(result: Result, code: str) -> dict[str, Any]:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    document = json.loads(result.stderr)
    assert document["error"]["code"] == code
    assert result.stderr.endswith("}\n")
    body: dict[str, Any] = document["error"]
    return body


def test_validate_prints_the_exact_document(files: dict[str, str]) -> None:
    result = run("validate", files["policy"])
    assert result.exit_code == 0
    assert result.stdout_bytes == (
        b'{\n  "policy_id": "release-gate",\n  "schema_version": "1.0",\n  "valid": true\n}\n'
    )


def test_evaluate_exits_zero_even_when_the_response_fails(files: dict[str, str]) -> None:
    document = ok(run("evaluate", files["policy"], files["failing"]))
    assert document["passed"] is False
    assert [r["reason_code"] for r in document["rule_results"]] == [
        "VALUE_NOT_EQUAL",
        "RULE_SATISFIED",
    ]


@pytest.mark.parametrize(("response", "expected"), [("passing", 0), ("failing", 1)])
def test_strict_exit_gates_on_the_result(
    files: dict[str, str], response: str, expected: int
) -> None:
    result = run("evaluate", files["policy"], files[response], "--strict-exit")
    assert ok(result, expected)["passed"] is (expected == 0)


def test_output_is_sorted_indented_utf8_with_a_trailing_newline(files: dict[str, str]) -> None:
    result = run("evaluate", files["policy"], files["passing"])
    text = result.stdout_bytes.decode("utf-8")
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2) + "\n"


def test_non_ascii_is_written_as_raw_utf8(tmp_path: Path) -> None:
    policy = {**POLICY, "rules": [{"rule_id": "r", "kind": "equals", "path": "x", "value": "é✓"}]}
    result = run("generate-synthetic", write(tmp_path / "p.json", policy))
    assert "é✓".encode() in result.stdout_bytes
    assert b"\\u" not in result.stdout_bytes


def test_response_can_come_from_stdin(files: dict[str, str]) -> None:
    result = run("evaluate", files["policy"], "-", stdin=json.dumps(PASSING).encode())
    assert ok(result)["passed"] is True


def test_only_one_input_may_come_from_stdin() -> None:
    error(run("evaluate", "-", "-", stdin=b"{}"), "INVALID_COMMAND")


def test_unreadable_files_are_invalid_json_input(files: dict[str, str]) -> None:
    body = error(run("validate", files["missing"]), "INVALID_JSON_INPUT")
    assert files["missing"] not in body["message"]
    error(run("validate", files["dir"]), "INVALID_JSON_INPUT")


def test_invalid_policy_error_carries_rule_context(files: dict[str, str]) -> None:
    body = error(run("validate", files["bad_policy"]), "INVALID_POLICY")
    assert body["policy_id"] == "release-gate"
    assert body["rule_index"] == 0
    assert "rule_id" not in body


def test_policy_is_validated_before_the_response_is_read(files: dict[str, str]) -> None:
    error(run("evaluate", files["bad_policy"], files["missing"]), "INVALID_POLICY")
    error(run("evaluate", files["missing"], files["missing"]), "INVALID_JSON_INPUT")


def test_non_object_response_is_invalid_response(files: dict[str, str]) -> None:
    error(run("evaluate", files["policy"], files["array"]), "INVALID_RESPONSE")


def test_check_order_reports_presentation_only_drift(files: dict[str, str]) -> None:
    result = run("check-order", files["policy"], files["failing"], "--strict-exit")
    document = ok(result)
    assert document["status"] == "PRESENTATION_ONLY_DRIFT"
    assert document["conforms_within_coverage"] is True
    assert document["coverage"]["orders_total"] == 2


def test_a_duplicate_member_in_the_response_is_invalid_json_input_as_in_evaluate(
    tmp_path: Path,
) -> None:
    one_rule = tmp_path / "one.json"
    one_rule.write_text(
        '{"policy_id": "p", "schema_version": "1.0", "rules": '
        '[{"rule_id": "r1", "kind": "required_field", "path": "decision"}]}'
    )
    response = tmp_path / "dup.json"
    response.write_text('{"decision": "a", "\\u0064ecision": "b"}')
    for command in ("evaluate", "check-order"):
        error(run(command, str(one_rule), str(response)), "INVALID_JSON_INPUT")


def test_check_order_coverage_has_exactly_the_specified_keys_when_exhaustive(
    files: dict[str, str],
) -> None:
    document = json.loads(run("check-order", files["policy"], files["passing"]).stdout)
    assert document["coverage"]["mode"] == "exhaustive"
    assert sorted(document["coverage"]) == [
        "charged_work_bytes",
        "estimated_input_work_bytes",
        "estimated_work_bytes",
        "evaluations_per_order",
        "evaluations_performed",
        "evaluator_runs",
        "incomplete_orders",
        "mode",
        "observed_result_bytes",
        "observed_work_bytes",
        "orders_evaluated",
        "orders_total",
        "report_byte_limit",
        "result_byte_limit",
        "rule_count",
        "rule_results_complete",
        "work_budget_bytes",
    ]


def test_check_order_refuses_eight_rules_before_reading_the_response(
    files: dict[str, str],
) -> None:
    error(run("check-order", files["eight"], files["missing"]), "ORDER_CHECK_TOO_LARGE")


def test_check_order_response_must_be_an_object(files: dict[str, str]) -> None:
    error(run("check-order", files["policy"], files["array"]), "ORDER_CHECK_INVALID")


def test_generate_synthetic_prints_the_bundle(files: dict[str, str]) -> None:
    document = ok(run("generate-synthetic", files["policy"]))
    assert document["passing_case"]["response"] == PASSING
    assert document["policy_id"] == "release-gate"


def test_generate_synthetic_conflict_is_a_controlled_error(tmp_path: Path) -> None:
    rules = [
        {"rule_id": "a", "kind": "false", "path": "x"},
        {"rule_id": "b", "kind": "empty_list", "path": "x"},
    ]
    path = write(tmp_path / "p.json", {**POLICY, "rules": rules})
    error(run("generate-synthetic", path), "SYNTHETIC_GENERATION_FAILED")


def test_output_is_written_atomically_with_ordinary_permissions(
    files: dict[str, str], tmp_path: Path
) -> None:
    target = tmp_path / "nested" / "dir" / "cases.json"
    previous = os.umask(0o022)
    try:
        document = ok(run("generate-synthetic", files["policy"], "--output", str(target)))
    finally:
        os.umask(previous)
    assert document == {"output_written": True, "policy_id": "release-gate"}
    assert json.loads(target.read_text(encoding="utf-8"))["policy_id"] == "release-gate"
    assert target.read_bytes().endswith(b"}\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # 0666 & ~umask, as any tool writes
    assert [p.name for p in target.parent.iterdir()] == ["cases.json"]


def test_output_refuses_to_overwrite_the_policy(files: dict[str, str]) -> None:
    before = Path(files["policy"]).read_bytes()
    error(
        run("generate-synthetic", files["policy"], "--output", files["policy"]), "JSON_OUTPUT_ERROR"
    )
    assert Path(files["policy"]).read_bytes() == before


def test_output_to_a_directory_is_an_output_error(files: dict[str, str]) -> None:
    error(run("generate-synthetic", files["policy"], "--output", files["dir"]), "JSON_OUTPUT_ERROR")


@pytest.mark.parametrize("target", ["", "  ", "-"])
def test_output_path_must_be_a_real_path(files: dict[str, str], target: str) -> None:
    error(run("generate-synthetic", files["policy"], "--output", target), "INVALID_COMMAND")


def test_generation_errors_leave_no_output_file(tmp_path: Path, files: dict[str, str]) -> None:
    target = tmp_path / "never.json"
    error(run("generate-synthetic", files["bad_policy"], "--output", str(target)), "INVALID_POLICY")
    assert not target.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["bogus"],
        [],
        ["validate"],
        ["evaluate", "p.json"],
        ["validate", "a", "b"],
        ["validate", "p.json", "--strict-exit"],
        ["evaluate", "p.json", "r.json", "--strict"],
        ["evaluate", "--unknown", "p.json", "r.json"],
        ["playground", "--port", "not-a-number"],
    ],
)
def test_usage_errors_are_json_invalid_command(args: list[str]) -> None:
    body = error(run(*args), "INVALID_COMMAND")
    assert "--help" in body["message"]


def test_unknown_option_is_reported_before_missing_arguments() -> None:
    body = error(run("evaluate", "--bogus"), "INVALID_COMMAND")
    assert "--bogus" in body["message"]


def test_help_is_plain_text() -> None:
    result = run("evaluate", "--help")
    assert result.exit_code == 0
    assert "--strict-exit" in result.stdout
    assert not result.stdout.startswith("{")


def test_explain_prints_plain_words_per_rule(files: dict[str, str]) -> None:
    result = run("explain", files["policy"], files["failing"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(" fails:")
    assert lines[1].lstrip().startswith("FAIL ")
    assert "not the value required" in lines[1]


def test_explain_json_carries_the_same_explanations(files: dict[str, str]) -> None:
    document = ok(run("explain", files["policy"], files["failing"], "--json"))
    assert "not the value required" in document["rule_explanations"][0]["explanation"]


def subprocess_run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "canon.cli", "policy", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_subprocess_evaluate_from_stdin_with_strict_exit(files: dict[str, str]) -> None:
    done = subprocess_run("evaluate", files["policy"], "-", "--strict-exit", stdin=b'{"x": 1}')
    assert done.returncode == 1
    assert done.stderr == b""
    assert json.loads(done.stdout)["passed"] is False
    assert done.stdout.endswith(b"}\n")


def test_subprocess_controlled_error_goes_to_stderr_with_exit_two(files: dict[str, str]) -> None:
    done = subprocess_run("evaluate", files["policy"], files["array"])
    assert done.returncode == 2
    assert done.stdout == b""
    assert json.loads(done.stderr)["error"]["code"] == "INVALID_RESPONSE"


def test_subprocess_usage_error_is_json(files: dict[str, str]) -> None:
    done = subprocess_run("check-order")
    assert done.returncode == 2
    assert json.loads(done.stderr)["error"]["code"] == "INVALID_COMMAND"


def test_subprocess_check_order_and_synthetic_round_trip(
    files: dict[str, str], tmp_path: Path
) -> None:
    target = tmp_path / "cases.json"
    done = subprocess_run("generate-synthetic", files["policy"], "--output", str(target))
    assert done.returncode == 0, done.stderr
    passing = json.loads(target.read_bytes())["passing_case"]["response"]
    response = write(tmp_path / "generated.json", passing)
    done = subprocess_run("check-order", files["policy"], response, "--strict-exit")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "PRESENTATION_ONLY_DRIFT"


def test_policy_commands_never_import_litellm_or_scipy(files: dict[str, str]) -> None:
    code = (
        "import sys\n"
        "from canon.cli import main\n"
        f"sys.argv = ['canon', 'policy', 'evaluate', {files['policy']!r}, {files['passing']!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('litellm', 'scipy') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=60, check=False
    )
    assert b"HEAVY []" in done.stderr


def test_bom_prefixed_file_is_invalid_json_input(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(POLICY).encode())
    assert "byte order mark" in error(run("validate", str(path)), "INVALID_JSON_INPUT")["message"]


def test_missing_playground_module_is_playground_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "canon.cli.policy_playground", None)
    error(run("playground", "--smoke-test"), "PLAYGROUND_UNAVAILABLE")


def test_uncontrolled_data_errors_still_leave_as_json(
    monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> None:
    import canon.cli.policy as cli_policy

    def broken(source: str) -> Any:
        raise ValueError("planted defect")

    monkeypatch.setattr(cli_policy, "load_policy", broken)
    assert "planted defect" in error(run("validate", files["policy"]), "INVALID_DATA")["message"]

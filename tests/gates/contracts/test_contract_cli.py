"""``canon contract`` through click's CliRunner and a few real subprocesses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli.contract import contract, parse_metadata

ABC = Path(__file__).resolve().parents[2] / "corpus" / "traces" / "abc-examples"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    """A directory with a failing, a passing and an unreadable trace (names out of order)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(ABC / "valid_claim.json", folder / "b_valid.json")
    shutil.copy(ABC / "invalid_claim.json", folder / "a_invalid.json")
    (folder / "c_broken.json").write_text("this is not a trace")
    return folder


def _invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(contract, list(args), catch_exceptions=False)


def test_run_json_has_one_record_per_file_in_name_order_and_isolates_bad_files(traces):
    result = _invoke(
        "run", "--contract", "claims-processing-v1", "--traces", str(traces / "*.json"), "--json"
    )
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    records = document["records"]
    assert [Path(r["trace"]).name for r in records] == [
        "a_invalid.json",
        "b_valid.json",
        "c_broken.json",
    ]
    assert [r["verdict"]["status"] for r in records] == ["fail", "pass", "error"]
    first = records[0]["verdict"]["violations"][0]
    assert {"index", "name", "severity", "message", "evidence"} <= set(first)
    assert "c_broken.json" in records[2]["error"]
    assert document["summary"] == {
        "contract": "claims-processing-v1",
        "contract_version": "1.0.0",
        "total": 3,
        "passed": 1,
        "failed": 1,
        "warned": 0,
        "errors": 1,
    }


def test_run_exits_zero_on_failures_unless_asked_to_fail(traces):
    args = ["run", "--contract", "claims-processing-v1", "--traces", str(traces / "?_*id*.json")]
    assert _invoke(*args).exit_code == 0
    failing = _invoke(*args, "--fail-on-violation")
    assert failing.exit_code == 1
    assert "FAIL  " in failing.stdout and "1 passed, 1 failed" in failing.stdout


def test_run_on_passing_traces_with_fail_on_violation_exits_zero(traces):
    result = _invoke(
        "run",
        "--contract",
        "claims-processing-v1",
        "--traces",
        str(traces / "b_valid.json"),
        "--fail-on-violation",
    )
    assert result.exit_code == 0 and result.stdout.startswith("PASS")


def test_a_malformed_contract_is_one_line_on_stderr_and_exit_two(tmp_path, traces):
    bad = tmp_path / "bad.yaml"
    bad.write_text("constraints:\n  - type: must_include_steps\n    steps: [a]\n    severty: x\n")
    result = _invoke("run", "--contract", str(bad), "--traces", str(traces / "b_valid.json"))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "unknown key 'severty'" in result.stderr and "constraints[0]" in result.stderr


def test_an_unknown_contract_name_is_reported(traces):
    result = _invoke("run", "--contract", "no-such", "--traces", str(traces / "b_valid.json"))
    assert result.exit_code == 2 and "neither a file nor a bundled template" in result.stderr


def test_no_matching_trace_is_a_usage_error(tmp_path):
    result = _invoke("run", "--contract", "claims-processing-v1", "--traces", str(tmp_path / "*.x"))
    assert result.exit_code == 2 and "no trace files match" in result.stderr


def test_metadata_values_read_as_json_scalars_where_they_parse():
    assert parse_metadata(("a=85", "b=true", "c=hello", "d=1.5", "e=null", "f=[1]", "g=")) == {
        "a": 85,
        "b": True,
        "c": "hello",
        "d": 1.5,
        "e": None,
        "f": "[1]",
        "g": "",
    }


def test_metadata_flag_reaches_when_conditions(traces):
    args = ["run", "--contract", "kyc-aml-screening-v1", "--traces", str(ABC / "kyc_valid.json")]
    assert _invoke(*args, "--metadata", "risk_score=50", "--fail-on-violation").exit_code == 0
    high = _invoke(*args, "--metadata", "risk_score=85", "--fail-on-violation")
    assert high.exit_code == 1
    assert "must_escalate_when(risk_score >= 70 or not a number)" in high.stdout


def test_malformed_metadata_is_a_usage_error():
    result = _invoke(
        "run",
        "--contract",
        "claims-processing-v1",
        "--traces",
        str(ABC / "valid_claim.json"),
        "--metadata",
        "novalue",
    )
    assert result.exit_code == 2 and "key=value" in result.stderr


def test_the_source_map_flag_is_merged_into_the_contracts_own_map(tmp_path):
    contract_file = tmp_path / "c.yaml"
    contract_file.write_text(
        "name: sm\nsource_map:\n  lookup_formulary: {source_name: formulary-db, source_type: db}\n"
        "constraints:\n  - type: must_retrieve_from\n    sources: [formulary-db, coverage-api]\n"
    )
    args = ["run", "--contract", str(contract_file), "--traces", str(ABC / "valid_claim.json")]
    alone = _invoke(*args, "--fail-on-violation")
    assert alone.exit_code == 1 and "not consulted: coverage-api" in alone.stdout
    extra = tmp_path / "sm.json"
    extra.write_text(json.dumps({"check_coverage": {"source_name": "coverage-api"}}))
    merged = _invoke(*args, "--source-map", str(extra), "--fail-on-violation")
    # the contract's formulary-db entry survives beside the flag's coverage-api entry
    assert merged.exit_code == 0, merged.output
    assert merged.stderr == ""


def test_on_a_clash_the_source_map_flag_wins_with_a_note(tmp_path):
    contract_file = tmp_path / "c.yaml"
    contract_file.write_text(
        "name: sm\nsource_map:\n  lookup_formulary: {source_name: formulary-db, source_type: db}\n"
        "constraints:\n  - type: must_retrieve_from\n    sources: [formulary-db]\n"
    )
    args = ["run", "--contract", str(contract_file), "--traces", str(ABC / "valid_claim.json")]
    clash = tmp_path / "clash.yaml"
    clash.write_text("lookup_formulary: {source_name: other-db, source_type: api}\n")
    result = _invoke(*args, "--source-map", str(clash), "--fail-on-violation")
    assert result.exit_code == 1
    assert "not consulted: formulary-db" in result.stdout
    assert result.stderr == (
        f"canon: note: --source-map {clash} maps tool 'lookup_formulary' to 'other-db' (api); "
        "sm maps it to 'formulary-db' (db); --source-map wins\n"
    )
    same = tmp_path / "same.yaml"
    same.write_text("lookup_formulary: {source_name: formulary-db, source_type: db}\n")
    agreeing = _invoke(*args, "--source-map", str(same), "--fail-on-violation")
    assert agreeing.exit_code == 0 and agreeing.stderr == ""


def test_a_template_keeps_its_own_source_map_beside_a_users_map(tmp_path):
    # the reference's examples pass a source map for their own tools beside the template's
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"some_other_tool": {"source_name": "x", "source_type": "api"}}))
    result = _invoke(
        "run",
        "--contract",
        "kyc-aml-screening-v1",
        "--traces",
        str(ABC / "kyc_valid.json"),
        "--source-map",
        str(extra),
        "--fail-on-violation",
    )
    assert result.exit_code == 0, result.output


def test_generate_writes_a_contract_its_golden_trace_passes(tmp_path):
    output = tmp_path / "generated.yaml"
    result = _invoke(
        "generate",
        "--traces",
        str(ABC / "valid_claim.json"),
        "--name",
        "golden-v1",
        "--output",
        str(output),
    )
    assert result.exit_code == 0, result.stderr
    assert "name: golden-v1" in output.read_text()
    replay = _invoke(
        "run",
        "--contract",
        str(output),
        "--traces",
        str(ABC / "valid_claim.json"),
        "--fail-on-violation",
    )
    assert replay.exit_code == 0
    assert (
        _invoke(
            "run",
            "--contract",
            str(output),
            "--traces",
            str(ABC / "invalid_claim.json"),
            "--fail-on-violation",
        ).exit_code
        == 1
    )


def test_generate_prints_yaml_without_output_and_refuses_several_golden_files():
    printed = _invoke("generate", "--traces", str(ABC / "kyc_valid.json"))
    assert printed.exit_code == 0 and "must_include_steps" in printed.stdout
    several = _invoke("generate", "--traces", str(ABC / "*.json"))
    assert several.exit_code == 2 and "exactly one" in several.stderr


@pytest.mark.parametrize("how", ["same path", "relative path", "symlink"])
def test_generate_refuses_to_overwrite_its_own_golden_trace(tmp_path, monkeypatch, how):
    golden = tmp_path / "golden.json"
    shutil.copy(ABC / "valid_claim.json", golden)
    before = golden.read_bytes()
    output = str(golden)
    if how == "relative path":
        monkeypatch.chdir(tmp_path / ".")
        (tmp_path / "sub").mkdir()
        output = "sub/../golden.json"
    elif how == "symlink":
        (tmp_path / "link.json").symlink_to(golden)
        output = str(tmp_path / "link.json")
    result = _invoke("generate", "--traces", str(golden), "--output", output)
    assert result.exit_code == 2
    assert "is the golden trace" in result.stderr and "would be overwritten" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert golden.read_bytes() == before


def test_generate_refuses_to_overwrite_its_source_map(tmp_path):
    source_map = tmp_path / "map.json"
    source_map.write_text('{"lookup_formulary": {"source_name": "formulary-db"}}')
    result = _invoke(
        "generate",
        *("--traces", str(ABC / "valid_claim.json"), "--source-map", str(source_map)),
        *("--output", str(source_map)),
    )
    assert result.exit_code == 2 and "is the source map" in result.stderr
    assert "formulary-db" in source_map.read_text()


def test_templates_lists_the_bundled_contracts():
    result = _invoke("templates")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [
        "claims-processing-v1",
        "clinical-decision-support-v1",
        "kyc-aml-screening-v1",
    ]
    rows = json.loads(_invoke("templates", "--json").stdout)
    assert rows[0]["constraints"] == 6
    assert "must_escalate_when" in _invoke("templates", "--show", "kyc-aml-screening-v1").stdout


def test_monitor_command_validates_and_writes_audit_records(traces, tmp_path):
    out = tmp_path / "audit"
    result = _invoke(
        "monitor",
        str(traces),
        "--contract",
        "claims-processing-v1",
        "--output-dir",
        str(out),
        "--max-polls",
        "2",
        "--poll-interval",
        "0",
        "--settle",
        "0",  # the files were just written; take them as finished
    )
    assert result.exit_code == 0
    assert "validated 2 trace(s)" in result.stdout and "1 unreadable" in result.stdout
    assert "compliance 50.0%" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        ".canon-monitor-alerts.jsonl",
        "error_c_broken.json",
        "fail_a_invalid.json",
        "pass_b_valid.json",
    ]
    # the unreadable file is named, with the reason, on stderr: once, though polled twice
    unreadable = [line for line in result.stderr.splitlines() if "unreadable" in line]
    assert unreadable == [
        f"canon contract monitor: {traces / 'c_broken.json'}: not a trace: not JSON: "
        "Expecting value at line 1 column 1, and line 1 is not a JSON document either; "
        "expected an OTLP/Jaeger JSON export or OTLP JSON lines (counted as unreadable)"
    ]


def _canon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "canon.cli", "contract", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_real_process_runs_a_template_over_the_corpus_examples():
    result = _canon(
        "run",
        "--contract",
        "claims-processing-v1",
        "--traces",
        str(ABC / "*claim.json"),
        "--json",
        "--fail-on-violation",
    )
    assert result.returncode == 1
    statuses = [r["verdict"]["status"] for r in json.loads(result.stdout)["records"]]
    assert statuses == ["fail", "pass"]


def test_real_process_reports_a_malformed_contract_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("constraints: []\n")
    result = _canon("run", "--contract", str(bad), "--traces", str(ABC / "valid_claim.json"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_real_process_contract_help_does_not_import_heavy_modules():
    probe = (
        "import sys; from canon.cli import main\n"
        "try:\n    main(['contract', 'templates'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('litellm', 'scipy') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"

"""Files and session exports that hold several runs (issue 16, section 3).

The recordings are real: Monocle's Anthropic test file holds five separate calls, and the
OpenInference Vercel export two ``generateText`` runs (each run recorded in two traces).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli.contract import contract

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "corpus" / "real-traces"
FIVE = REAL / "monocle" / "test_anthropic_finish_reason_integration.json"
TWO = REAL / "openinference" / "vercel_v6_generateText.json"
FIVE_IDS = [
    "faa65a4b6fdeabb83e02f48c72ebf343",
    "9b0481621bea764dcebd0dda971e6ba7",
    "b85160188231bf64d5825468c6ba5075",
    "72ce072ca3b7e03e55231f589b699c22",
    "88bbd9f74bbd6e92f4529d0ad7812cec",
]
# fails only the run whose request is "Say hello."
HELLO_CONTRACT = """\
name: no-hello
version: "1"
constraints:
  - type: must_include_steps
    steps: [greeting_tool]
    when: {input_matches: "say hello"}
"""


@pytest.fixture
def contract_file(tmp_path: Path) -> Path:
    path = tmp_path / "no-hello.yaml"
    path.write_text(HELLO_CONTRACT)
    return path


def _invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(contract, list(args), catch_exceptions=False)


def test_run_gives_one_verdict_per_run_with_its_trace_id(contract_file: Path) -> None:
    result = _invoke("run", "--contract", str(contract_file), "--traces", str(FIVE), "--json")
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)["records"]
    assert [r["trace_id"] for r in records] == FIVE_IDS
    assert [r["verdict"]["status"] for r in records] == ["fail", "pass", "pass", "pass", "pass"]
    assert all(r["trace"] == str(FIVE) for r in records)
    assert json.loads(result.stdout)["summary"]["total"] == 5


def test_run_text_names_each_run_and_exits_with_the_worst(
    contract_file: Path, tmp_path: Path
) -> None:
    result = _invoke(
        "run", "--contract", str(contract_file), "--traces", str(FIVE), "--fail-on-violation"
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"FAIL  {FIVE} [{FIVE_IDS[0]}]"
    assert f"PASS  {FIVE} [{FIVE_IDS[1]}]" in lines
    assert lines[-1].startswith("5 run(s) against no-hello v1: 4 passed, 1 failed")
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    worst = _invoke(
        "run",
        "--contract",
        str(contract_file),
        "--traces",
        str(FIVE),
        "--traces",
        str(broken),
        "--fail-on-violation",
    )
    assert worst.exit_code == 2  # an unreadable file is worse than a failed run


def test_run_writes_one_audit_record_per_run(contract_file: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    result = _invoke(
        "run", "--contract", str(contract_file), "--traces", str(FIVE), "--audit-dir", str(audit)
    )
    assert result.exit_code == 0
    names = sorted(path.name for path in audit.iterdir())
    assert names == sorted(
        f"{'fail' if n == 0 else 'pass'}_{FIVE.stem}_{trace}.json"
        for n, trace in enumerate(FIVE_IDS)
    )
    record = json.loads((audit / f"fail_{FIVE.stem}_{FIVE_IDS[0]}.json").read_text())
    assert record["execution_summary"]["execution_id"] == FIVE_IDS[0]
    assert record["execution_summary"]["input_preview"] == "Say hello."


def test_a_run_of_two_traces_each_is_still_one_verdict(contract_file: Path) -> None:
    result = _invoke("run", "--contract", str(contract_file), "--traces", str(TWO), "--json")
    records = json.loads(result.stdout)["records"]
    assert [r["trace_id"] for r in records] == [
        "700d5f98fe2420adcf6ab0822f7a323c",
        "673a889f59126f8b4c90dce5a1f99368",
    ]


def test_a_single_run_file_keeps_its_plain_line(contract_file: Path, tmp_path: Path) -> None:
    single = tmp_path / "one.json"
    shutil.copy(REAL / "strands-evals" / "claude_live_spans.json", single)
    result = _invoke("run", "--contract", str(contract_file), "--traces", str(single))
    assert result.stdout.splitlines()[0] == f"PASS  {single}"


def _canon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "canon.cli", "contract", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_generate_from_several_runs_asks_which_one() -> None:
    result = _canon("generate", "--traces", str(FIVE))
    assert result.returncode == 2
    message = result.stderr.strip()
    assert "holds 5 runs; choose the golden one with --trace-id" in message
    assert all(trace in message for trace in FIVE_IDS)
    assert len(message.splitlines()) == 1


def test_generate_with_trace_id_uses_that_run(tmp_path: Path) -> None:
    output = tmp_path / "golden.yaml"
    result = _canon(
        "generate", "--traces", str(FIVE), "--trace-id", FIVE_IDS[2], "--output", str(output)
    )
    assert result.returncode == 0, result.stderr
    checked = _canon("run", "--contract", str(output), "--traces", str(FIVE), "--json")
    statuses = [r["verdict"]["status"] for r in json.loads(checked.stdout)["records"]]
    assert statuses[2] == "pass"


def test_generate_with_an_unknown_trace_id_lists_the_runs() -> None:
    result = _canon("generate", "--traces", str(FIVE), "--trace-id", "deadbeef")
    assert result.returncode == 2
    assert "--trace-id deadbeef" in result.stderr
    assert FIVE_IDS[0] in result.stderr


def test_audit_record_names_make_a_trace_id_safe_for_a_file_name(
    contract_file: Path, tmp_path: Path
) -> None:
    def span(trace_id: str, span_id: str, start_s: int) -> dict[str, object]:
        return {
            "traceId": trace_id,
            "spanId": span_id,
            "name": "invoke_agent a",
            "startTimeUnixNano": str(start_s * 10**9),
            "endTimeUnixNano": str(start_s * 10**9 + 10**8),
        }

    runs = tmp_path / "runs.json"
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [span("run/1", "a1", 100)]}]}]}
    document["resourceSpans"][0]["scopeSpans"][0]["spans"].append(span("run 2:x", "b1", 200))
    runs.write_text(json.dumps(document))
    audit = tmp_path / "audit"
    result = _invoke(
        "run", "--contract", str(contract_file), "--traces", str(runs), "--audit-dir", str(audit)
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in audit.iterdir()) == [
        "pass_runs_run_1.json",
        "pass_runs_run_2_x.json",
    ]

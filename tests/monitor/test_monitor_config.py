"""canon.yaml's ``monitor:`` section: the monitors' judging defaults, each overridden by
its flag, and refused naming the file when it is wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from canon.core.online import sampled
from canon.monitor.streams import Keys, append_spans, connect, read_records

from support.cli import copy_example, run_canon
from support.online import EXAMPLES, trace_document, trace_id

CONTRACT = str(EXAMPLES / "contract.yaml")


def _project(tmp_path: Path, section: str) -> Path:
    project = copy_example(tmp_path)
    config = project / "canon.yaml"
    config.write_text(config.read_text() + section)
    return project


def _watch(tmp_path: Path, count: int) -> tuple[Path, list[str]]:
    watch = tmp_path / "in"
    watch.mkdir()
    ids = [trace_id(n) for n in range(count)]
    for n, ident in enumerate(ids):
        (watch / f"t{n}.json").write_text(json.dumps(trace_document(ident)))
    return watch, ids


def _kinds(project: Path, watch: Path, out: Path, *flags: str) -> dict[str, str]:
    result = run_canon(
        project, "contract", "monitor", str(watch), "--contract", CONTRACT,
        "--output-dir", str(out), "--settle", "0", "--max-polls", "1", *flags,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    records = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    return {r["trace_id"]: r.get("decision", {}).get("kind", "none") for r in records}


def test_the_monitor_section_turns_judging_on_and_each_flag_overrides_it(tmp_path: Path) -> None:
    project = _project(tmp_path, "monitor:\n  judge: true\n  sample: 0.5\n  salt: s\n")
    watch, ids = _watch(tmp_path, 10)
    kinds = _kinds(project, watch, tmp_path / "a")  # no judging flag at all
    assert {i for i, k in kinds.items() if k == "judged"} == {
        i for i in ids if sampled(i, 0.5, "s")
    }
    assert set(kinds.values()) == {"judged", "sampled-out"}
    assert set(_kinds(project, watch, tmp_path / "b", "--sample", "1").values()) == {"judged"}
    salted = _kinds(project, watch, tmp_path / "c", "--salt", "t")
    assert {i for i, k in salted.items() if k == "judged"} == {
        i for i in ids if sampled(i, 0.5, "t")
    }
    assert set(_kinds(project, watch, tmp_path / "d", "--no-judge").values()) == {"none"}


def test_a_budget_from_the_config_holds_and_the_flag_overrides_it(tmp_path: Path) -> None:
    project = _project(tmp_path, "monitor:\n  judge: true\n  budget: 0\n")
    watch, _ = _watch(tmp_path, 3)
    # nothing may be spent today: every sampled trace is budget-dropped, none judged
    assert set(_kinds(project, watch, tmp_path / "a").values()) == {"budget-dropped"}
    assert set(_kinds(project, watch, tmp_path / "b", "--budget", "1").values()) == {"judged"}


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("monitor:\n  sampel: 0.1\n", "monitor setting(s) 'sampel' (did you mean 'sample'?)"),
        ("monitor:\n  sample: 2\n", "'monitor.sample' must be a number from 0 to 1, got 2"),
        ("monitor:\n  budget: -1\n", "'monitor.budget' must be a number >= 0, got -1"),
        ("monitor:\n  judge: yes please\n", "'monitor.judge' must be true or false"),
        ("monitor:\n  salt: ''\n", "'monitor.salt' must be non-empty text"),
        ("monitor: 5\n", "'monitor' must be a mapping, got 5"),
    ],
)
def test_a_bad_monitor_section_is_exit_2_naming_the_file(
    tmp_path: Path, section: str, message: str
) -> None:
    project = _project(tmp_path, section)
    watch, _ = _watch(tmp_path, 1)
    result = run_canon(
        project, "contract", "monitor", str(watch), "--contract", CONTRACT,
        "--output-dir", str(tmp_path / "out"), "--max-polls", "1",
    )  # fmt: skip
    assert result.returncode == 2
    assert str(project / "canon.yaml") in result.stderr and message in result.stderr


def test_a_sample_flag_without_judging_on_anywhere_is_refused(tmp_path: Path) -> None:
    project = _project(tmp_path, "monitor:\n  sample: 0.5\n")  # a default, judging still off
    watch, _ = _watch(tmp_path, 1)
    assert set(_kinds(project, watch, tmp_path / "a").values()) == {"none"}
    result = run_canon(
        project, "contract", "monitor", str(watch), "--contract", CONTRACT,
        "--output-dir", str(tmp_path / "b"), "--max-polls", "1", "--budget", "1",
    )  # fmt: skip
    assert result.returncode == 2 and "--budget goes with --judge" in result.stderr


def test_the_worker_takes_judge_sample_and_settle_from_the_config(
    tmp_path: Path, redis_url: str
) -> None:
    project = _project(
        tmp_path, "monitor:\n  judge: true\n  sample: 0.5\n  salt: s\n  settle: 0.2\n"
    )
    ids = [trace_id(n) for n in range(8)]
    append_spans(
        connect(redis_url), Keys(), 1,
        [(ident, json.dumps(trace_document(ident)), True) for ident in ids],
    )  # fmt: skip
    worker = subprocess.run(
        [
            sys.executable, "-m", "canon", "monitor", "worker", "--redis", redis_url,
            "--streams", "1", "--contract", CONTRACT, "--exit-when-idle", "1",
        ],
        cwd=project, capture_output=True, text=True, timeout=25, check=False,
    )  # fmt: skip  # without monitor.settle it would wait 30 s for each trace
    assert worker.returncode == 0, worker.stderr
    records: list[dict[str, Any]] = read_records(connect(redis_url), Keys())
    kinds = {r["trace_id"]: r["decision"]["kind"] for r in records}
    assert set(kinds) == set(ids)
    assert {i for i, k in kinds.items() if k == "judged"} == {
        i for i in ids if sampled(i, 0.5, "s")
    }

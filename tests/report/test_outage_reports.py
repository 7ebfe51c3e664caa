"""A judge outage (HTTP 500 on every call) reads INCOMPLETE, with its cause, in every format.

One real project against the fake OpenAI server: accepted while the judge answers, then
scored and checked while it answers 500. No output may call an unjudged artifact non-canon.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from support.helper_modules import load_helper
from support.model_judge import MODEL_JUDGE, model_env, model_project

fake_llm_server = load_helper("judge/fake_llm_server.py")

CONFIG = (
    MODEL_JUDGE + "suite: suite.yaml\njudge_cache: false\nbaselines_dir: baselines\n"
    "judge_options:\n  max_attempts: 1\n"
)
KEYS = ["duplicate-charge", "large-refund", "roaming-question"]
CAUSE = "HTTP 500: server exploded"


@pytest.fixture(scope="module")
def outage(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    root = tmp_path_factory.mktemp("outage")
    project = model_project(root, CONFIG)
    with fake_llm_server.running_fake_llm() as llm:
        env = {**model_env(llm.base_url), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

        def canon(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "canon", *args],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )

        llm.script("contradict any part", "No contradiction.\nANSWER: no")
        llm.script("surface the tradeoff", "Nothing pulls apart.\nANSWER: n/a")
        llm.script("", "Looks right.\nANSWER: yes")
        assert canon("accept", "--quiet").returncode == 0
        llm.rules.clear()
        llm.script("", always="500")
        runs = {}
        for command in ("score", "check"):
            runs[f"{command}-text"] = canon(
                command,
                "--quiet",
                "--junit-xml",
                f"{root}/{command}.xml",
                "--html",
                f"{root}/{command}.html",
            )
            runs[f"{command}-json"] = canon(command, "--quiet", "--format", "json")
            summary = root / f"{command}-summary.md"
            env["GITHUB_STEP_SUMMARY"] = str(summary)
            runs[f"{command}-github"] = canon(command, "--quiet", "--format", "github")
            del env["GITHUB_STEP_SUMMARY"]
            runs[f"{command}-summary"] = subprocess.CompletedProcess(
                [], 0, summary.read_text(encoding="utf-8"), ""
            )
            for name in ("xml", "html"):
                runs[f"{command}-{name}"] = subprocess.CompletedProcess(
                    [], 0, (root / f"{command}.{name}").read_text(encoding="utf-8"), ""
                )
        yield runs


@pytest.mark.parametrize("command", ["score", "check"])
def test_every_run_exits_3(outage, command):
    for fmt in ("text", "json", "github"):
        assert outage[f"{command}-{fmt}"].returncode == 3, outage[f"{command}-{fmt}"].stderr


def test_score_text_says_incomplete_and_the_cause_once(outage):
    out = outage["score-text"].stdout
    assert "NON-CANON" not in out and "non-canon" not in out.replace("0 non-canon", "")
    assert [line.split()[0] for line in out.splitlines() if line.split()[-1] in KEYS] == [
        "INCOMPLETE"
    ] * 3
    assert "0 canon, 0 non-canon, 3 incomplete (not judged)" in out
    assert out.count(CAUSE) == 1
    assert "judge failed on 30 question(s)" in out
    # stderr names the first failure as check does: artifact, question, cause
    error = outage["score-text"].stderr
    assert "30 question(s) unscored (first: duplicate-charge mission: " in error


def test_score_json_counts_incomplete(outage):
    document = json.loads(outage["score-json"].stdout)
    summary = document["summary"]
    assert (summary["canon"], summary["non_canon"], summary["incomplete"]) == (0, 0, 3)
    assert [a["verdict"] for a in document["artifacts"]] == ["incomplete"] * 3
    (failure,) = summary["judge_failures"]
    assert CAUSE in failure["error"] and failure["questions"] == 30


@pytest.mark.parametrize("command", ["score", "check"])
def test_junit_and_github_say_incomplete_never_non_canon(outage, command):
    suite = ET.fromstring(outage[f"{command}-xml"].stdout).find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    errors = [e.get("message", "") for e in suite.iter("error")]
    assert len(errors) == 3 and all(m.startswith("incomplete (not judged)") for m in errors)
    github = outage[f"{command}-github"].stdout
    assert "non-canon artifact" not in github
    assert "3 artifact(s) incomplete (not judged)" in github and CAUSE in github
    summary = outage[f"{command}-summary"].stdout
    assert summary.startswith("### Canon: suite `suite`: INCOMPLETE")
    assert "3 artifact(s): 0 canon, 0 non-canon, 3 incomplete (not judged)." in summary
    assert "The judge failed on 30 question(s): " in summary and CAUSE in summary


@pytest.mark.parametrize("command", ["score", "check"])
def test_html_says_incomplete(outage, command):
    page = outage[f"{command}-html"].stdout
    assert '<p class="banner unsure" id="banner">INCOMPLETE</p>' in page
    assert '<td id="summary-non-canon">0</td>' in page
    assert '<td id="summary-incomplete">3</td>' in page
    assert CAUSE in page
    # said once in the summary (and the check's comparison) and once per card, not per row
    assert page.count(CAUSE) <= 5
    assert len(re.findall(r'<ul class="judge-failures"><li>judge failed on 10 question', page)) == 3


def test_check_names_the_cause_and_leaves_unjudged_out_of_the_rates(outage):
    out = outage["check-text"].stdout
    assert "-> 0/3" not in out  # the rate no longer falls to 0 % on an outage
    assert "3 incomplete (not judged, left out of the rates)" in out
    assert "first: duplicate-charge mission: " in out and CAUSE in out
    (drift,) = [line for line in out.splitlines() if line.startswith("mean drift")]
    assert drift.startswith("mean drift (Layer 2): not tested")
    assert out.rstrip().splitlines()[-1].startswith("INCOMPLETE:")
    document = json.loads(outage["check-json"].stdout)
    assert document["status"] == "unavailable" and document["exit_code"] == 3
    assert document["incomplete"] == KEYS and CAUSE in document["cause"]
    assert [r["verdict"] for r in document["results"]] == ["incomplete"] * 3
    # and stderr names the cause in one error line, as score's does
    error = outage["check-text"].stderr.strip().splitlines()
    assert error[-1].startswith("canon: error: the judge was unavailable: 30 question(s)")
    assert "(first: duplicate-charge mission: " in error[-1] and 'canon check" again' in error[-1]
    page = outage["check-html"].stdout
    assert "<th>verdict</th><td>no regression" not in page
    assert "<th>verdict</th><td>not tested" in page

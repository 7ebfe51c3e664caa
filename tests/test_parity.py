"""One project, one verdict, whichever door (issue 22).

The same project is checked through every door Canon has: the CLI (a real process), pytest
(``canon_baseline`` through ``pytester``), the Python API (``CoherenceMetric.from_config``
and ``check_run``), provider batch mode (against the local batch server) and ``--estimate``.
Each door must reach the same per-artifact verdicts and send the same request bodies to the
recording server, in each setting the plan carries: a ``confirm_judge``, concurrency 1, a
constitution changed since accept, a 20 MB baseline, and ``max_cost`` reached.
"""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from canon.check import check_run
from canon.check.metric import CoherenceMetric
from canon.check.plan import build_plan
from canon.check.spend import model_judge, pending_requests, planned_looks
from canon.errors import BudgetExceededError
from canon.judge.sync import run_sync
from canon.project.baselines import read_baseline
from canon.project.config import load_config
from canon.project.suite import read_suite
from canon.report.junit import junit_xml

from support.cli import copy_example, run_canon
from support.helper_modules import load_helper

fake_llm_server = load_helper("judge/fake_llm_server.py")
batch_server = load_helper("judge/batch_server.py")

pytestmark = pytest.mark.slow

# The check's run rewords one reply; the judge reads the reworded one as failing everything.
REWORDED = "Charges like this one are always refunded in full, whatever the handbook says."
CONFIG = (
    "judge_model: openai:fake-judge\n"
    "constitution_path: constitution.yaml\n"
    "suite: suite.yaml\n"
    "policy: policy.json\n"
    "contract: contract.yaml\n"
    "baselines_dir: baselines\n"
    "judge_cache: false\n"
)
SETTINGS = {
    "plain": "",
    "confirm_judge": "confirm_judge: openai:fake-confirm\n",
    "concurrency_1": "concurrency: 1\n",
    "constitution_changed": "",
    "baseline_20mb": "",
}
PYTEST_FILE = """
from pathlib import Path

import pytest

from canon.project.suite import read_suite

ARTIFACTS = read_suite(Path(__file__).parent / "suite.yaml")


@pytest.mark.parametrize("artifact", ARTIFACTS, ids=[a.key for a in ARTIFACTS])
def test_coheres_with_its_baseline(canon_baseline, artifact):
    canon_baseline.check(artifact, id=artifact.key)
"""


def _script(server: Any) -> None:
    server.script(REWORDED, "It breaks the handbook.\nANSWER: no")
    server.script("contradict any part", "No contradiction.\nANSWER: no")
    server.script("surface the tradeoff", "Nothing pulls apart.\nANSWER: n/a")
    server.script("", "It holds.\nANSWER: yes")


@pytest.fixture
def fake() -> Iterator[Any]:
    with fake_llm_server.running_fake_llm() as server:
        _script(server)
        yield server


def _env(base_url: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test"}
    env.update(extra)
    return env


def _project(root: Path, setting: str, base_url: str, config: str = CONFIG) -> Path:
    """The example project, judged by the recording server, accepted, then reworded."""
    project = copy_example(root)
    (project / "canon.yaml").write_text(config + SETTINGS[setting])
    accepted = run_canon(project, "accept", "--quiet", env=_env(base_url))
    assert accepted.returncode == 0, accepted.stderr
    suite = project / "suite.yaml"
    text = suite.read_text()
    assert "covers duplicate charges" in text
    suite.write_text(text.replace("Section 4.2 of the billing handbook", REWORDED, 1))
    if setting == "constitution_changed":
        constitution = project / "constitution.yaml"
        constitution.write_text(
            constitution.read_text().replace("quickly, accurately", "accurately")
        )
    if setting == "baseline_20mb":
        _pad_baseline(project / "baselines" / "suite.json", 20 * 1024 * 1024)
    return project


def _pad_baseline(path: Path, size: int) -> None:
    """Add recorded artifacts this run does not have until the file is ``size`` bytes."""
    data = json.loads(path.read_text())
    record = data["artifacts"]["roaming-question"]
    one = len(json.dumps(record, indent=2)) + 40
    for n in range(size // one + 1):
        data["artifacts"][f"archived-{n:06d}"] = record
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    assert path.stat().st_size > size


def _bodies(requests: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(body, sort_keys=True) for body in requests)


def _junit_verdicts(xml: str) -> dict[str, bool]:
    """Per artifact, whether it fails (a failure or an error in its testcase)."""
    verdicts: dict[str, bool] = {}
    for case in ET.fromstring(xml).iter("testcase"):
        name = case.get("name", "")
        name = name.split("[", 1)[1].rstrip("]") if "[" in name else name
        if case.find("skipped") is not None or name in ("mean-drift", "judge-noise"):
            continue
        verdicts[name] = case.find("failure") is not None or case.find("error") is not None
    return verdicts


def _cli(project: Path, server: Any, *args: str) -> tuple[int, dict[str, bool], Counter[str]]:
    server.requests.clear()
    report = project / "cli.xml"
    done = run_canon(
        project, "check", "--quiet", "--junit-xml", str(report), *args, env=_env(server.base_url)
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, _junit_verdicts(report.read_text()), _bodies(server.requests)


def _pytest_door(
    pytester: pytest.Pytester, project: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, dict[str, bool], Counter[str]]:
    server.requests.clear()
    for item in project.iterdir():
        target = pytester.path / item.name
        if item.is_dir():
            shutil.copytree(item, target, dirs_exist_ok=True)
        else:
            shutil.copy(item, target)
    (pytester.path / "test_agent.py").write_text(PYTEST_FILE)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    result = pytester.runpytest_subprocess(
        "-q", "-p", "no:randomly", "--canon-baseline=suite", "--junitxml=pytest.xml"
    )
    code = int(result.ret)
    return (
        code,
        _junit_verdicts((pytester.path / "pytest.xml").read_text()),
        _bodies(server.requests),
    )


def _api(
    project: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, dict[str, bool], Counter[str]]:
    server.requests.clear()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = load_config(project / "canon.yaml")
    metric = CoherenceMetric.from_config(config)
    baseline = read_baseline(project / "baselines" / "suite.json")
    assert config.suite is not None
    artifacts = read_suite(config.suite)
    outcome = run_sync(check_run(metric.plan, artifacts, baseline, tolerance=config.tolerance))
    xml = junit_xml(outcome.results, metric.plan, suite="suite", comparison=outcome.comparison)
    code = 0 if outcome.comparison.status == "conforms" else 1
    return code, _junit_verdicts(xml), _bodies(server.requests)


def _estimated_bodies(project: Path, server: Any, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The bodies of the requests ``--estimate`` counts, as each judge would send them."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = load_config(project / "canon.yaml")
    plan = build_plan(config)
    baseline = read_baseline(project / "baselines" / "suite.json")
    assert config.suite is not None
    artifacts = read_suite(config.suite)
    looks = planned_looks(plan, artifacts, baseline=baseline)
    pending, _cached, _stopped = pending_requests(plan, artifacts, looks)
    bodies = []
    for planned in pending:
        judge = model_judge(planned.judge)
        assert judge is not None
        bodies.append(
            {"model": judge.model.split("/", 1)[1], **judge.request_fields(planned.request)}
        )
    return _bodies(bodies)


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_every_door_sends_the_same_requests_and_reaches_the_same_verdicts(
    setting: str, tmp_path: Path, fake: Any, pytester: pytest.Pytester, monkeypatch
) -> None:
    project = _project(tmp_path, setting, fake.base_url)

    fake.requests.clear()
    estimate = run_canon(
        project, "check", "--estimate", "--format", "json", env=_env(fake.base_url)
    )
    assert estimate.returncode == 0, estimate.stderr
    assert fake.requests == []  # an estimate asks nothing
    planned = json.loads(estimate.stdout)["estimate"]["calls"]

    cli_code, cli_verdicts, cli_bodies = _cli(project, fake)
    pytest_code, pytest_verdicts, pytest_bodies = _pytest_door(pytester, project, fake, monkeypatch)
    api_code, api_verdicts, api_bodies = _api(project, fake, monkeypatch)

    # The reworded reply fails; the others hold; every door says so.
    assert cli_verdicts == {
        "duplicate-charge": True,
        "large-refund": False,
        "roaming-question": False,
    }, setting
    assert pytest_verdicts == cli_verdicts
    assert api_verdicts == cli_verdicts
    assert cli_code == api_code == 1
    assert pytest_code == pytest.ExitCode.TESTS_FAILED
    # The same requests, body for body (the order may differ with concurrency).
    assert pytest_bodies == cli_bodies
    assert api_bodies == cli_bodies
    # The estimate plans the run's own requests, built as the run builds them: its first
    # asks and second looks are all sent; what the run sends beyond them are the re-asks
    # that confirmed the reworded reply's failure, which no estimate can know in advance.
    estimated = _estimated_bodies(project, fake, monkeypatch)
    assert sum(estimated.values()) == planned
    assert not estimated - cli_bodies
    if setting == "confirm_judge":
        models = Counter(json.loads(body)["model"] for body in cli_bodies.elements())
        assert set(models) == {"fake-judge", "fake-confirm"}  # later looks by the second judge


@pytest.fixture
def batch() -> Iterator[Any]:
    with batch_server.running_batch_server() as server:
        yield server


@pytest.mark.parametrize("setting", ["plain", "confirm_judge"])
def test_batch_mode_asks_what_the_online_run_asks(setting: str, tmp_path: Path, batch: Any):
    env = _env(batch.base_url, CANON_BATCH_POLL_SECONDS="0.01")
    config = CONFIG.replace("judge_cache: false\n", "judge_cache: .canon/cache.sqlite\n")
    project = copy_example(tmp_path)
    (project / "canon.yaml").write_text(config + SETTINGS[setting])
    assert run_canon(project, "accept", "--quiet", "--no-cache", env=env).returncode == 0

    batch.chat_requests.clear()
    online = run_canon(project, "check", "--quiet", "--no-cache", "--format", "json", env=env)
    online_bodies = _bodies(batch.chat_requests)
    assert online.returncode == 0, online.stderr

    batch.chat_requests.clear()
    batched = run_canon(project, "check", "--quiet", "--batch", "--format", "json", env=env)
    assert batched.returncode == online.returncode, batched.stderr
    lines = [
        json.loads(line)
        for data in batch.files.values()
        for line in data.decode().splitlines()
        if line.strip().startswith('{"custom_id"')
    ]
    assert lines, "the check was not batched"
    batch_bodies = _bodies([line["body"] for line in lines])
    # Every batched request is one the online run sends (with its answer format), and the
    # batch plus the online rest is exactly the online run.
    assert batch_bodies + _bodies(batch.chat_requests) == online_bodies
    assert all("response_format" in json.loads(body) for body in batch_bodies)
    online_doc, batch_doc = json.loads(online.stdout), json.loads(batched.stdout)
    assert batch_doc["status"] == online_doc["status"]
    assert batch_doc["non_canon"] == online_doc["non_canon"]


PRICED = CONFIG.replace("openai:fake-judge", "openai:gpt-4o-mini")


def test_max_cost_reached_stops_every_door_within_the_budget(
    tmp_path: Path, fake: Any, pytester: pytest.Pytester, monkeypatch
) -> None:
    project = _project(tmp_path, "plain", fake.base_url, PRICED)
    with (project / "canon.yaml").open("a") as config:
        config.write("max_cost: 0.0005\n")  # a few calls' worth of gpt-4o-mini
    env = _env(fake.base_url)

    estimate = run_canon(project, "check", "--estimate", "--format", "json", env=env)
    assert estimate.returncode == 0
    planned = json.loads(estimate.stdout)
    assert planned["estimate"]["cost_usd"] > planned["max_cost_usd"]

    for args in ((), ("--batch",)):
        fake.requests.clear()
        done = run_canon(project, "check", "--quiet", *args, env=env)
        assert done.returncode == 4, done.stderr  # refused before spending
        assert "max_cost" in done.stderr and fake.requests == []

    # pytest and the API cannot see the whole run first: their guard stops the first
    # request that would cross the budget, so what they spent stays within it.
    code, _verdicts, bodies = _pytest_door(pytester, project, fake, monkeypatch)
    assert code != pytest.ExitCode.OK
    assert 0 < sum(bodies.values()) < planned["estimate"]["calls"]
    assert "BudgetExceededError" in (pytester.path / "pytest.xml").read_text()

    fake.requests.clear()
    with pytest.raises(BudgetExceededError, match="max_cost"):
        _api(project, fake, monkeypatch)
    assert 0 < len(fake.requests) < planned["estimate"]["calls"]

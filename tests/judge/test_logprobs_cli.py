"""A model judge's log-probabilities through real `canon accept` and `canon check` processes
against the fake model server.

A judge split about a changed reply (issue 23's coin flip) never lets a check pass. The
changed reply decides a 640 EUR refund itself, against P2. The judge's replies read it as
sound, but its log-probabilities put half the mass on the other answer: a coin flip that a
label alone would hide (with ``logprobs: false`` this check conformed). By default Canon asks
an OpenAI-compatible judge for its log-probabilities and sees the split.

A judge that reads labels alone samples three answers an ask by default (``samples: auto``),
and sees the same coin in their shares; with ``samples: 1`` that check conformed.

A baseline judged from labels alone (before ``logprobs: auto``), or from one answer an ask
(before ``samples: auto``), is checked reading its answers that way, so the two compare;
``canon accept`` then records the judge's default reading.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from canon.check.provenance import JudgeChangedError, ReadAsRecorded, read_as_recorded
from canon.core.baseline import Baseline
from canon.judge.litellm_judge import LiteLLMJudge

from support.cli import run_canon
from support.model_judge import MODEL_JUDGE, model_env, model_project

SOUND = "artifacts:\n  - id: refund\n    text: I refunded the duplicate 19.99 EUR charge.\n"
CHANGED = "artifacts:\n  - id: refund\n    text: I refunded your 640 EUR myself.\n"
# The gate in each of its wordings, and P2 in each of its (quoted only in its own question).
GATE = (
    "contradict any part of the mission",
    "goes against the mission",
    "run counter to the mission",
)
P2_QUOTED = '"Hand any refund above 200 EUR'
CONFIG = MODEL_JUDGE + "suite: one.yaml\njudge_cache: false\nbaselines_dir: baselines\n"


def _judge(fake_llm: Any, *, split: bool, coin: bool = False) -> None:
    """Sure of every answer; with ``split`` its probabilities are half and half on the gate
    and P2, and with ``coin`` its sampled labels about them alternate (a judge read from
    labels alone, flipping a coin)."""
    fake_llm.rules.clear()
    top = {"yes": 0.5, "no": 0.5} if split else None
    for wording in GATE:
        fake_llm.script(
            wording,
            *(("ANSWER: no", "ANSWER: no", "ANSWER: yes") if coin else ("ANSWER: no",)),
            top=top,
        )
    fake_llm.script(
        P2_QUOTED, *(("ANSWER: yes", "ANSWER: no") if coin else ("ANSWER: yes",)), top=top
    )
    fake_llm.script("", "ANSWER: yes")


def _project(tmp_path: Any, extra: str = "") -> Any:
    return model_project(tmp_path, CONFIG + extra, {"one.yaml": SOUND})


def test_a_check_whose_judge_is_split_about_the_changed_reply_never_conforms(tmp_path, fake_llm):
    project = _project(tmp_path)
    env = model_env(fake_llm.base_url)
    _judge(fake_llm, split=False)
    accepted = run_canon(project, "accept", "--quiet", env=env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    (project / "one.yaml").write_text(CHANGED)
    _judge(fake_llm, split=True)
    checked = run_canon(project, "check", env=env)
    # inconclusive: the judge's own probabilities are half and half, so it cannot tell
    assert checked.returncode == 6, checked.stdout + checked.stderr
    assert "CONFORMS" not in checked.stdout and "INCONCLUSIVE" in checked.stdout
    assert "the judge stayed split over its re-asks on 2 cell(s)" in checked.stdout
    # its noise is its probability of answering otherwise, not whether its top label moved
    assert "judge noise seen on re-asks: 16/32 = 50%" in checked.stdout
    asked = [body for body in fake_llm.requests if P2_QUOTED in str(body)]
    assert asked and all(body.get("logprobs") is True for body in asked)


@pytest.mark.parametrize(("samples", "code"), [("auto", 6), ("1", 0)])
def test_a_judge_read_from_labels_samples_and_sees_the_coin_it_flips(
    tmp_path, fake_llm, samples, code
):
    # The judge gives no probabilities (logprobs: false: Anthropic, Bedrock, Mistral, Ollama
    # give none) and flips a coin on the changed reply. By default it is asked three answers
    # an ask, and their shares show the split; asked for one, its first looks read the reply
    # as sound and the check conforms: the hole samples: auto closes.
    project = _project(tmp_path, f"judge_options:\n  logprobs: false\n  samples: {samples}\n")
    env = model_env(fake_llm.base_url)
    _judge(fake_llm, split=False)
    assert run_canon(project, "accept", "--quiet", env=env).returncode == 0
    recorded = json.loads((project / "baselines" / "one.json").read_text())
    assert (recorded["logprobs"], recorded["samples"]) == (False, 3 if samples == "auto" else 1)
    (project / "one.yaml").write_text(CHANGED)
    _judge(fake_llm, split=False, coin=True)
    asked = len(fake_llm.requests)
    checked = run_canon(project, "check", env=env)
    assert checked.returncode == code, checked.stdout + checked.stderr
    bodies = fake_llm.requests[asked:]
    if samples == "auto":
        assert "INCONCLUSIVE" in checked.stdout and "CONFORMS" not in checked.stdout
        assert "stayed split" in checked.stdout
        # three answers in one request, sampled: at temperature 0 they would be one answer
        assert all(body.get("n") == 3 and body["temperature"] >= 0.7 for body in bodies)
    else:
        assert "CONFORMS" in checked.stdout
        assert all("n" not in body for body in bodies)


def test_the_same_judge_sure_of_its_answers_lets_the_check_conform(tmp_path, fake_llm):
    # The control: the same replies without the split conform, so the test above fails on
    # the split it plants and nothing else.
    project = _project(tmp_path)
    env = model_env(fake_llm.base_url)
    _judge(fake_llm, split=False)
    assert run_canon(project, "accept", "--quiet", env=env).returncode == 0
    (project / "one.yaml").write_text(CHANGED)
    checked = run_canon(project, "check", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "CONFORMS" in checked.stdout


def test_a_baseline_judged_from_labels_is_checked_reading_labels_until_accepted_again(
    tmp_path, fake_llm
):
    project = _project(tmp_path)
    env = model_env(fake_llm.base_url)
    fake_llm.script("", "ANSWER: yes", top={"yes": 0.8, "partly": 0.2})
    config = project / "canon.yaml"
    config.write_text(CONFIG + "judge_options:\n  logprobs: false\n")  # as before auto
    assert run_canon(project, "accept", "--quiet", env=env).returncode == 0
    assert json.loads((project / "baselines" / "one.json").read_text())["logprobs"] is False
    config.write_text(CONFIG)  # the default: auto
    asked = len(fake_llm.requests)
    checked = run_canon(project, "check", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        "was judged from labels alone, so openai/fake-judge reads its answers that way"
        in checked.stderr
    )
    assert not any(body.get("logprobs") for body in fake_llm.requests[asked:])
    # accepted again, the baseline holds the judge's probabilities, and checks read them
    assert run_canon(project, "accept", "--quiet", env=env).returncode == 0
    assert json.loads((project / "baselines" / "one.json").read_text())["logprobs"] is True
    asked = len(fake_llm.requests)
    checked = run_canon(project, "check", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "judged from labels alone" not in checked.stderr
    assert all(body.get("logprobs") is True for body in fake_llm.requests[asked:])


def test_a_baseline_judged_from_one_answer_an_ask_is_checked_asking_one_and_says_so(
    tmp_path, fake_llm
):
    project = _project(tmp_path)
    env = model_env(fake_llm.base_url)
    fake_llm.script("", "ANSWER: yes")
    config = project / "canon.yaml"
    config.write_text(CONFIG + "judge_options:\n  logprobs: false\n  samples: 1\n")
    assert run_canon(project, "accept", "--quiet", env=env).returncode == 0
    config.write_text(CONFIG + "judge_options:\n  logprobs: false\n")  # samples: auto
    asked = len(fake_llm.requests)
    checked = run_canon(project, "check", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        "baselines/one.json was judged from one answer an ask, so openai/fake-judge reads its "
        'answers that way in this check too; run "canon accept" to record them as it reads '
        "them by default (samples: auto" in checked.stderr
    )
    assert all("n" not in body for body in fake_llm.requests[asked:])
    # told another number than its baseline says: refused before any call, exit 2
    config.write_text(CONFIG + "judge_options:\n  logprobs: false\n  samples: 3\n")
    asked = len(fake_llm.requests)
    refused = run_canon(project, "check", env=env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "baselines/one.json was judged asking one answer an ask" in refused.stderr
    assert "set judge_options samples: 1" in refused.stderr
    assert len(fake_llm.requests) == asked


def test_a_judge_told_to_read_the_other_way_than_its_baseline_is_refused(tmp_path, fake_llm):
    # logprobs: true against a baseline judged from labels: the scores do not compare (a
    # sampling judge's unchanged suite read 36.5 % of checks as a confident REGRESSION so:
    # bench_deterministic_evidence llm-upgrade-true). Refused like a changed judge, exit 2.
    project = _project(tmp_path)
    env = model_env(fake_llm.base_url)
    fake_llm.script("", "ANSWER: yes", top={"yes": 0.8, "partly": 0.2})
    config = project / "canon.yaml"
    config.write_text(CONFIG + "judge_options:\n  logprobs: false\n")
    assert run_canon(project, "accept", "--quiet", env=env).returncode == 0
    config.write_text(CONFIG + "judge_options:\n  logprobs: true\n")
    asked = len(fake_llm.requests)
    checked = run_canon(project, "check", env=env)
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert "baselines/one.json was judged from labels alone" in checked.stderr
    assert "reads log-probabilities in this run" in checked.stderr
    assert "set judge_options logprobs: auto" in checked.stderr
    assert len(fake_llm.requests) == asked  # refused before any judge call


def _model_judge(logprobs: object) -> LiteLLMJudge:
    return LiteLLMJudge(
        "openai/fake-judge", api_base="http://127.0.0.1:9/v1", api_key="k", logprobs=logprobs
    )


@pytest.mark.parametrize(
    ("recorded", "setting", "reads", "adapted"),
    [
        # older than format 7: labels, so auto reads labels, and (older than format 8) from
        # one answer an ask, where samples: auto would ask three of a judge reading labels
        (None, "auto", False, (True, 1)),
        (False, "auto", False, (True, 1)),
        (True, "auto", True, None),
        (None, True, True, None),  # a judge told, a baseline that does not say: left alone
        (None, False, False, (False, 1)),
        (True, True, True, None),
        (False, False, False, (False, 1)),
    ],
)
def test_a_judge_reads_as_its_baseline_was_read(recorded, setting, reads, adapted):
    judge = _model_judge(setting)
    baseline = Baseline(7, "cdt", "1.1.0", None, judge.name, None, 0.85, {}, logprobs=recorded)
    changed = read_as_recorded((judge, None), baseline)
    assert changed == ([ReadAsRecorded(judge.name, *adapted)] if adapted else [])
    assert judge.reads_probabilities is reads
    assert judge.samples == 1


@pytest.mark.parametrize(
    ("logprobs", "recorded", "setting", "asks", "pinned"),
    [
        # a judge reading labels at auto asks three answers; as many as its baseline says
        (False, None, "auto", 1, 1),  # older than format 8: one answer an ask
        (False, 1, "auto", 1, 1),
        (False, 3, "auto", 3, None),
        (False, 5, "auto", 5, 5),
        (True, None, "auto", 1, None),  # reading probabilities: one answer, as recorded
        (True, 1, "auto", 1, None),
        (False, None, 3, 3, None),  # told, against a baseline that does not say: left alone
        (False, 3, 3, 3, None),
    ],
)
def test_a_judge_samples_as_its_baseline_was_sampled(logprobs, recorded, setting, asks, pinned):
    judge = LiteLLMJudge(
        "openai/fake-judge",
        api_base="http://127.0.0.1:9/v1",
        api_key="k",
        logprobs=logprobs,
        samples=setting,
    )
    baseline = Baseline(
        8, "cdt", "1.1.0", None, judge.name, None, 0.85, {}, logprobs=logprobs, samples=recorded
    )
    changed = read_as_recorded((judge, None), baseline)
    assert changed == ([ReadAsRecorded(judge.name, False, pinned)] if pinned else [])
    assert judge.samples == asks


def test_a_judge_told_another_number_of_samples_than_its_baseline_is_refused():
    judge = LiteLLMJudge(
        "openai/fake-judge", api_base="http://127.0.0.1:9/v1", api_key="k", samples=1
    )
    baseline = Baseline(8, "cdt", "1.1.0", None, judge.name, None, 0.85, {}, samples=3)
    with pytest.raises(JudgeChangedError, match=r"b\.json was judged asking 3 answers an ask"):
        read_as_recorded((judge,), baseline, source="b.json")


@pytest.mark.parametrize(("recorded", "setting"), [(False, True), (True, False)])
def test_a_judge_told_the_other_way_is_refused_naming_both(recorded, setting):
    baseline = Baseline(7, "cdt", "1.1.0", None, "x", None, 0.85, {}, logprobs=recorded)
    with pytest.raises(JudgeChangedError, match=r"b\.json was judged from"):
        read_as_recorded((_model_judge(setting),), baseline, source="b.json")

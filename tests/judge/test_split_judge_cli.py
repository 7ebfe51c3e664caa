"""A judge split about a changed reply (issue 23's coin flip) never lets a check pass.

Through real `canon accept` and `canon check` processes against the fake model server. The
changed reply decides a 640 EUR refund itself, against P2. The judge's replies read it as
sound, but its log-probabilities put half the mass on the other answer: a coin flip that a
label alone would hide (with ``logprobs: false`` this check conformed). By default Canon asks
an OpenAI-compatible judge for its log-probabilities and sees the split.
"""

from __future__ import annotations

from typing import Any

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


def _judge(fake_llm: Any, *, split: bool) -> None:
    fake_llm.rules.clear()
    top = {"yes": 0.5, "no": 0.5} if split else None
    for wording in GATE:
        fake_llm.script(wording, "ANSWER: no", top=top)
    fake_llm.script(P2_QUOTED, "ANSWER: yes", top=top)
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
    assert checked.returncode in (1, 6), checked.stdout + checked.stderr
    assert "CONFORMS" not in checked.stdout
    asked = [body for body in fake_llm.requests if P2_QUOTED in str(body)]
    assert asked and all(body.get("logprobs") is True for body in asked)


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

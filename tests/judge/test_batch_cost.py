"""Tokens, cost, --estimate and max_cost through canon's commands, over real HTTP."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from support.cli import invoke_here as _canon
from support.helper_modules import load_helper
from support.model_judge import PRICED_JUDGE

CONFIG = PRICED_JUDGE + "suite: suite.yaml\n"  # as the priced_project fixture writes it
CALLS = 30  # 3 artifacts x 10 questions
# gpt-4o-mini in litellm's price table, USD per token
INPUT, OUTPUT, CACHED_INPUT = 0.15e-6, 0.60e-6, 0.075e-6


batch_server = load_helper("judge/batch_server.py")


def test_score_reports_tokens_and_cost_per_run_and_per_question_kind(priced_project, batch_llm):
    result = _canon("score", "--format", "json", "--junit-xml", "r.xml", "--html", "r.html")
    assert result.exit_code == 0, result.output
    usage = json.loads(result.stdout)["usage"]
    prompt, completion = CALLS * batch_server.PROMPT_TOKENS, CALLS * batch_server.COMPLETION_TOKENS
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (
        CALLS,
        prompt,
        completion,
    )
    assert usage["cost_usd"] == pytest.approx(prompt * INPUT + completion * OUTPUT)
    kinds = {kind: data["calls"] for kind, data in usage["by_kind"].items()}
    assert kinds == {"facet": 15, "gate": 3, "principle": 12}
    properties = {
        p.get("name"): p.get("value") for p in ET.parse(priced_project / "r.xml").iter("property")
    }
    assert properties["usage.calls"] == str(CALLS)
    assert properties["usage.gate.calls"] == "3"
    assert float(properties["usage.cost_usd"]) == pytest.approx(usage["cost_usd"])
    html = (priced_project / "r.html").read_text()
    assert 'id="summary-judge-usage"' in html and "$0.00" in html
    text = _canon("score", "--no-cache")
    assert f"judge usage: {CALLS} call(s), {prompt} prompt + {completion}" in text.stdout


def test_cached_prompt_tokens_are_reported_and_priced_lower(priced_project, batch_llm):
    batch_llm.cached_tokens = 300  # of the 400 prompt tokens, read from the provider's cache
    result = _canon("score", "--format", "json")
    usage = json.loads(result.stdout)["usage"]
    assert usage["cached_prompt_tokens"] == CALLS * 300
    prompt, completion = CALLS * batch_server.PROMPT_TOKENS, CALLS * batch_server.COMPLETION_TOKENS
    full = prompt * INPUT + completion * OUTPUT
    discounted = CALLS * (100 * INPUT + 300 * CACHED_INPUT) + completion * OUTPUT
    assert usage["cost_usd"] == pytest.approx(discounted) and discounted < full
    assert f"({CALLS * 300} cached)" in _canon("score", "--no-cache").stdout


def test_a_model_litellm_cannot_price_costs_unknown_never_zero(priced_project, batch_llm):
    (priced_project / "canon.yaml").write_text(CONFIG.replace("gpt-4o-mini", "in-house-judge"))
    result = _canon("score", "--format", "json", "--junit-xml", "r.xml")
    assert result.exit_code == 0, result.output
    usage = json.loads(result.stdout)["usage"]
    assert usage["calls"] == CALLS and usage["cost_usd"] == "unknown"
    assert {data["cost_usd"] for data in usage["by_kind"].values()} == {"unknown"}
    properties = {
        p.get("name"): p.get("value") for p in ET.parse(priced_project / "r.xml").iter("property")
    }
    assert properties["usage.cost_usd"] == "unknown"
    assert "cost unknown" in _canon("score", "--no-cache").stdout


def test_estimate_counts_calls_after_gates_and_cache_and_asks_nothing(priced_project, batch_llm):
    (priced_project / "canon.yaml").write_text(CONFIG + "policy: policy.json\n")
    (priced_project / "responses" / "large-refund.json").write_text('{"decision": "shrug"}')
    before = _canon("score", "--estimate", "--format", "json")
    assert before.exit_code == 0, before.output
    estimate = json.loads(before.stdout)["estimate"]
    assert batch_llm.chat_requests == [] and batch_llm.batches == {}
    assert estimate["stopped_by_gates"] == 1  # its response fails the policy gate
    assert estimate["calls"] == 2 * 10
    assert estimate["cost_usd"] == pytest.approx(
        estimate["prompt_tokens"] * INPUT + estimate["completion_tokens"] * OUTPUT
    )
    # the real prompt is several hundred tokens; the estimate counts it with litellm
    assert estimate["prompt_tokens"] > estimate["calls"] * 200

    scored = _canon("score", "--quiet")
    assert len(batch_llm.chat_requests) == estimate["calls"], scored.output
    after = json.loads(_canon("score", "--estimate", "--format", "json").stdout)["estimate"]
    assert after["calls"] == 0 and after["cached"] == estimate["calls"]


def test_estimate_at_the_batch_price_is_half_and_unknown_for_an_unpriced_model(
    priced_project, batch_llm
):
    online = json.loads(_canon("score", "--estimate", "--format", "json").stdout)["estimate"]
    batch = json.loads(_canon("score", "--estimate", "--batch", "--format", "json").stdout)
    assert batch["estimate"]["batch"] is True
    assert batch["estimate"]["cost_usd"] == pytest.approx(online["cost_usd"] / 2)
    (priced_project / "canon.yaml").write_text(CONFIG.replace("gpt-4o-mini", "in-house-judge"))
    unpriced = _canon("score", "--estimate")
    assert unpriced.exit_code == 0 and "cost unknown" in unpriced.stdout
    assert "nothing was asked" in unpriced.stdout and batch_llm.chat_requests == []


def test_max_cost_below_the_estimate_stops_before_any_call_with_exit_4(priced_project, batch_llm):
    (priced_project / "canon.yaml").write_text(CONFIG + "max_cost: 0.0001\n")
    for command in ("score", "accept"):
        result = _canon(command)
        assert result.exit_code == 4, result.output
        assert "over max_cost $0.0001" in result.stderr and "nothing was spent" in result.stderr
    assert batch_llm.chat_requests == []
    assert not (priced_project / "canon" / "baselines" / "suite.json").exists()


def test_max_cost_stops_a_run_whose_calls_cost_more_than_estimated(priced_project, batch_llm):
    # The estimate passes, but every call reports 20,000 prompt tokens (3 mills each), so
    # the budget stops the run after a few calls instead of spending on.
    (priced_project / "canon.yaml").write_text(CONFIG + "max_cost: 0.01\nconcurrency: 1\n")
    batch_llm.prompt_tokens = 20_000
    result = _canon("score")
    assert result.exit_code == 4, result.output
    assert "stopped before crossing max_cost $0.0100" in result.stderr
    asked = len(batch_llm.chat_requests)
    assert 1 <= asked <= 4  # 0.01 / 0.003 per call: the fourth would cross it
    assert asked * 20_000 * INPUT <= 0.01
    # the answers paid for are cached: a re-run with room to finish does not pay for them again
    (priced_project / "canon.yaml").write_text(CONFIG + "max_cost: 1\n")
    finished = _canon("score", "--quiet")
    assert finished.exit_code == 0, finished.output
    assert len(batch_llm.chat_requests) == CALLS


def test_max_cost_with_a_model_litellm_cannot_price_is_refused_as_config(priced_project, batch_llm):
    (priced_project / "canon.yaml").write_text(
        CONFIG.replace("gpt-4o-mini", "in-house-judge") + "max_cost: 5\n"
    )
    result = _canon("score")
    assert result.exit_code == 2
    assert "max_cost is set but litellm has no price" in result.stderr
    assert batch_llm.chat_requests == []


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("max_cost: -1", "'max_cost' must be a number of US dollars >= 0"),
        ("max_cost: lots", "'max_cost' must be a number of US dollars >= 0"),
        ("judge_options:\n  batch: 'yes'", "judge option 'batch' must be true or false"),
    ],
)
def test_bad_spending_settings_name_the_config_file(priced_project, setting, message):
    (priced_project / "canon.yaml").write_text(CONFIG + setting + "\n")
    result = _canon("score")
    assert result.exit_code == 2
    assert message in result.stderr and "canon.yaml" in result.stderr


def test_estimate_for_a_scripted_judge_says_it_costs_nothing(monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the repository's own mock config
    result = _canon("score", "--estimate", "--format", "json")
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.stdout)["estimate"]
    assert estimate["scripted"] is True and estimate["calls"] == 0
    assert estimate["cost_usd"] == 0 and estimate["stopped_by_gates"] == 0
    assert "scripted judge" in _canon("score", "--estimate").stdout

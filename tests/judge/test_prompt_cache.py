"""Prompt caching: the shared prefix of one artifact's questions, marked only when it pays."""

from __future__ import annotations

from canon.core.artifact import Artifact
from canon.core.constitution import Constitution
from canon.core.prompt import render_prompt
from canon.judge.litellm_module import load_litellm
from canon.judge.prompt_cache import (
    ANTHROPIC_HAIKU_MIN_TOKENS,
    mark_shared_prefix,
    minimum_cacheable_tokens,
    prefix_shares,
)
from canon.project.store import load_rubric

SONNET = "anthropic/claude-sonnet-4-20250514"


def _messages(constitution: Constitution, text: str, question_id: str = "P1") -> list:
    rubric = load_rubric()
    question = {q.id: q for q in rubric.questions_for(constitution)}[question_id]
    return render_prompt(question, text, constitution, rubric.instructions).as_messages()


def test_questions_with_the_same_choices_share_a_prefix_and_the_gate_stands_alone(constitution):
    shares = prefix_shares(load_rubric().questions_for(constitution))
    assert shares["G"] == 1  # its system message lists other choices
    assert {shares[q] for q in shares if q != "G"} == {len(shares) - 1}


def test_the_prompts_of_one_artifact_differ_only_after_the_shared_prefix(constitution):
    first, second = (_messages(constitution, "An artifact.", q) for q in ("P1", "P2"))
    assert first[0] == second[0]
    cut = first[1]["content"].rfind("\n\nQUESTION\n")
    assert cut > 0 and first[1]["content"][:cut] == second[1]["content"][:cut]


def test_a_long_prefix_read_again_is_marked_for_anthropic_and_keeps_the_text(constitution):
    litellm = load_litellm()
    messages = _messages(constitution, "The customer wrote at length. " * 400)
    marked = mark_shared_prefix(litellm, SONNET, messages, shares=9)
    blocks = marked[1]["content"]
    assert blocks[0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in blocks[1] and blocks[1]["text"].startswith("\n\nQUESTION\n")
    assert blocks[0]["text"] + blocks[1]["text"] == messages[1]["content"]
    assert marked[0] == messages[0]


def test_no_marker_when_nothing_reads_the_prefix_again_or_it_is_too_short(constitution):
    litellm = load_litellm()
    long_text = "The customer wrote at length. " * 400
    assert mark_shared_prefix(litellm, SONNET, _messages(constitution, long_text), 1) == (
        _messages(constitution, long_text)
    )
    short = _messages(constitution, "Refunded.")
    assert mark_shared_prefix(litellm, SONNET, short, 9) == short  # below 1,024 tokens


def test_providers_that_cache_on_their_own_get_no_marker(constitution):
    litellm = load_litellm()
    messages = _messages(constitution, "The customer wrote at length. " * 400)
    assert mark_shared_prefix(litellm, "openai/gpt-4o-mini", messages, 9) == messages
    assert minimum_cacheable_tokens("openai/gpt-4o-mini") is None
    haiku = "anthropic/claude-3-5-haiku-20241022"
    assert minimum_cacheable_tokens(haiku) == ANTHROPIC_HAIKU_MIN_TOKENS


def test_an_openai_endpoint_gets_plain_messages_and_the_answer_carries_usage(
    constitution, fake_llm
):
    # Through real HTTP: an OpenAI-compatible endpoint gets the plain text messages.
    from canon.judge.base import JudgeRequest
    from canon.judge.litellm_judge import LiteLLMJudge
    from canon.judge.sync import run_sync

    fake_llm.script("", "ANSWER: yes")
    judge = LiteLLMJudge(
        "openai/gpt-4o-mini", api_base=fake_llm.base_url, api_key="sk-test", timeout=5
    )
    rubric = load_rubric()
    question = rubric.questions_for(constitution)[0]
    request = JudgeRequest(
        question, Artifact("x " * 3000), constitution, rubric.instructions, prefix_shares=9
    )
    answer = run_sync(judge.answer(request))
    assert isinstance(fake_llm.requests[0]["messages"][1]["content"], str)
    assert answer.usage is not None and answer.usage.calls == 1

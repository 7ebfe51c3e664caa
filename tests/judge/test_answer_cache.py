"""The judge answer cache, in front of a real LiteLLM judge talking HTTP to a local server."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.errors import CacheError, JudgeUnavailableError
from canon.judge.base import JudgeRequest
from canon.judge.cache import AnswerCache, CachingJudge, answer_key, fresh_judge
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.mock import MockJudge
from canon.judge.sync import run_sync


def _ask_all(judge: Any, requests: list[JudgeRequest]) -> list[Answer]:
    async def go() -> list[Answer]:
        return [await judge.answer(request) for request in requests]

    return run_sync(go())


@pytest.fixture
def requests(
    questions: dict[str, Question], ask: Callable[..., JudgeRequest]
) -> list[JudgeRequest]:
    return [ask(question) for question in questions.values()]


def test_a_second_run_is_answered_from_the_cache_without_a_request(
    tmp_path: Path, fake_llm: Any, make_judge: Callable[..., LiteLLMJudge], requests: Any
) -> None:
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    first = CachingJudge(make_judge(), AnswerCache(tmp_path / "cache.sqlite3"))
    answers = _ask_all(first, requests)
    assert len(fake_llm.requests) == len(requests) and first.misses == len(requests)
    first.cache.close()

    second = CachingJudge(make_judge(), AnswerCache(tmp_path / "cache.sqlite3"))
    assert _ask_all(second, requests) == answers
    assert len(fake_llm.requests) == len(requests)  # not one more request
    assert (second.hits, second.misses) == (len(requests), 0)
    assert second.name == "openai/fake-judge"


def test_another_artifact_text_or_judge_setting_is_asked_again(
    tmp_path: Path,
    fake_llm: Any,
    make_judge: Callable[..., LiteLLMJudge],
    questions: dict[str, Question],
    ask: Callable[..., JudgeRequest],
) -> None:
    fake_llm.script("", "ANSWER: yes")
    cache = AnswerCache(tmp_path / "cache.sqlite3")
    question = questions["mission"]
    _ask_all(CachingJudge(make_judge(), cache), [ask(question, "first text")])
    _ask_all(CachingJudge(make_judge(), cache), [ask(question, "first text")])
    assert len(fake_llm.requests) == 1
    _ask_all(CachingJudge(make_judge(), cache), [ask(question, "second text")])
    assert len(fake_llm.requests) == 2
    _ask_all(CachingJudge(make_judge(temperature=0.7), cache), [ask(question, "first text")])
    assert len(fake_llm.requests) == 3
    _ask_all(CachingJudge(make_judge(samples=3), cache), [ask(question, "first text")])
    assert len(fake_llm.requests) == 4
    _ask_all(CachingJudge(make_judge(), cache), [ask(questions["tradeoff"], "first text")])
    assert len(fake_llm.requests) == 5
    assert len(cache) == 5


def test_a_failed_question_is_not_cached_and_is_asked_again_next_time(
    tmp_path: Path, fake_llm: Any, make_judge: Callable[..., LiteLLMJudge], requests: Any
) -> None:
    rule = fake_llm.script("", "ANSWER: yes", always="503")
    judge = CachingJudge(make_judge(max_attempts=2), AnswerCache(tmp_path / "c.sqlite3"))
    with pytest.raises(JudgeUnavailableError):
        _ask_all(judge, requests[:1])
    assert len(judge.cache) == 0 and judge.misses == 0
    rule.always = None  # the provider is back
    before = len(fake_llm.requests)
    answers = _ask_all(judge, requests[:1])
    assert len(fake_llm.requests) == before + 1
    assert answers[0].distribution == {"yes": 1.0} and len(judge.cache) == 1


def test_an_endpoint_from_the_environment_is_part_of_the_judge_identity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judge = LiteLLMJudge("openai/gpt-x")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    one = judge.cache_identity()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2/v1")
    assert judge.cache_identity() != one
    assert one["model"] == "openai/gpt-x"


def test_the_key_covers_the_whole_prompt(
    questions: dict[str, Question], ask: Callable[..., JudgeRequest]
) -> None:
    identity = {"model": "openai/x"}
    base = ask(questions["mission"], "text")
    again = ask(questions["mission"], "text")
    assert answer_key(identity, base) == answer_key(dict(identity), again)
    others = [
        ask(questions["mission"], "other text"),
        ask(questions["tradeoff"], "text"),
        JudgeRequest(base.question, base.artifact, base.constitution, base.instructions + "!"),
        JudgeRequest(base.question, base.artifact, base.constitution, base.instructions, 1),
        JudgeRequest(base.question, base.artifact, base.constitution, base.instructions, 2),
    ]
    keys = {answer_key(identity, request) for request in others}
    assert answer_key(identity, base) not in keys and len(keys) == 5
    assert answer_key({"model": "openai/y"}, base) != answer_key(identity, base)


def test_a_file_that_is_not_a_cache_stops_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    path.write_bytes(b"this is not a database, just some text that sits where the cache goes")
    with pytest.raises(CacheError, match="cannot open the judge answer cache") as caught:
        AnswerCache(path)
    assert str(path) in str(caught.value) and "--no-cache" in str(caught.value)
    assert path.read_bytes().startswith(b"this is not a database")  # never overwritten


def test_a_cache_in_a_place_that_cannot_be_written_stops_with_a_clear_error(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(CacheError, match="cannot open"):
        AnswerCache(blocker / "cache.sqlite3")


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        '{"distribution": {}}',
        '{"distribution": {"yes": 1.5}}',
        '{"distribution": {"yes": true}}',
        '{"distribution": {"yes": 1.0}, "rationale": 5}',
        "[1, 2]",
    ],
)
def test_an_entry_that_is_not_an_answer_is_discarded_not_used(tmp_path: Path, stored: str) -> None:
    path = tmp_path / "cache.sqlite3"
    cache = AnswerCache(path)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO answers VALUES (?, ?)", ("k", stored))
    assert cache.get("k") is None and cache.discarded == 1
    cache.put("k", Answer(distribution={"yes": 1.0}))  # the fresh answer replaces it
    assert cache.get("k") == Answer(distribution={"yes": 1.0}) and cache.discarded == 1


def test_answers_round_trip_with_their_rationale(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path / "c.sqlite3")
    answer = Answer(distribution={"yes": 0.75, "no": 0.25}, rationale="because")
    cache.put("k", answer)
    assert cache.get("k") == answer and cache.get("other") is None


def test_two_writers_share_one_cache_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    AnswerCache(path).close()

    def write(prefix: str) -> None:
        cache = AnswerCache(path)
        for number in range(50):
            cache.put(f"{prefix}{number}", Answer(distribution={"yes": 1.0}))
        cache.close()

    threads = [threading.Thread(target=write, args=(prefix,)) for prefix in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(AnswerCache(path)) == 100


def test_a_mock_judge_cannot_be_cached_and_fresh_judge_unwraps_a_cache(tmp_path: Path) -> None:
    mock = MockJudge(script={"__default__": "yes"})
    assert not hasattr(mock, "cache_identity")
    inner = LiteLLMJudge("openai/gpt-x")
    cached = CachingJudge(inner, AnswerCache(tmp_path / "c.sqlite3"))
    assert fresh_judge(cached) is inner and fresh_judge(mock) is mock
    assert "CachingJudge" in repr(cached)


def test_a_cached_judge_answers_inside_a_running_event_loop(
    tmp_path: Path, fake_llm: Any, make_judge: Callable[..., LiteLLMJudge], requests: Any
) -> None:
    fake_llm.script("", "ANSWER: yes")
    judge = CachingJudge(make_judge(), AnswerCache(tmp_path / "c.sqlite3"))

    async def inside_a_loop() -> list[Answer]:
        return _ask_all(judge, requests[:2])  # run_sync hops to a worker thread here

    assert len(asyncio.run(inside_a_loop())) == 2
    assert _ask_all(judge, requests[:2]) and judge.hits == 2


_LOCK_HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()  # hold the write lock until the test says so
db.execute("COMMIT")
"""


def test_a_write_lock_held_by_another_process_delays_answers_but_loses_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess
    import sys

    path = tmp_path / "c.sqlite3"
    AnswerCache(path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _LOCK_HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        cache = AnswerCache(path, busy_timeout=0.2)
        answers = {f"k{n}": Answer(distribution={"yes": 1.0}, rationale=f"r{n}") for n in range(3)}
        for key, answer in answers.items():
            cache.put(key, answer)  # waits briefly, then keeps the answer pending
        assert cache.unsaved == 3
        assert cache.get("k1") == answers["k1"]  # a pending answer is still an answer
        assert cache.flush(wait=True) == 3  # still busy after waiting once more
        from canon.cli.run import _cache_notes

        _cache_notes(CachingJudge(LiteLLMJudge("openai/gpt-x"), cache), quiet=True)
        note = capsys.readouterr().err
        assert f"{path} is busy (another process holds its write lock)" in note
        assert "3 answer(s) of this run were used but not saved" in note
        assert "delete" not in note
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=10)
    assert cache.flush() == 0 and cache.unsaved == 0
    cache.close()
    reopened = AnswerCache(path)
    assert {key: reopened.get(key) for key in answers} == answers


def test_an_entry_with_labels_the_question_lacks_is_discarded_and_asked_again(
    tmp_path: Path, fake_llm: Any, make_judge: Callable[..., LiteLLMJudge], requests: Any
) -> None:
    fake_llm.script("", "ANSWER: yes")
    path = tmp_path / "cache.sqlite3"
    judge = CachingJudge(make_judge(), AnswerCache(path))
    key = answer_key(judge.inner.cache_identity(), requests[0])
    judge.cache.put(key, Answer(distribution={"maybe": 1.0}))  # well-formed, but no choice
    (fresh,) = _ask_all(judge, requests[:1])
    assert fresh.distribution == {"yes": 1.0} and len(fake_llm.requests) == 1
    assert (judge.hits, judge.misses, judge.cache.discarded) == (0, 1, 1)
    assert judge.cache.get(key) == fresh  # the fresh answer replaced the entry


def test_two_runs_opening_a_new_cache_at_once_both_get_it(tmp_path: Path) -> None:
    # SQLite answers the loser of the race to switch a new file to WAL "locked" at once,
    # without waiting: the cache must wait it out, not stop the run with exit 2.
    import threading

    failures: list[Exception] = []
    for attempt in range(20):
        path = tmp_path / f"cache-{attempt}.sqlite3"
        start = threading.Barrier(3)

        def open_it(path: Path = path, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                AnswerCache(path).close()
            except Exception as exc:  # collected and asserted below
                failures.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []

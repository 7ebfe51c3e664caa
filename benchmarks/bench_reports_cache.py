"""Time the CI reports and the judge answer cache.

Reports: JUnit XML and HTML for 1,000 artifacts x 10 questions, plain run and ``check``.
Cache: per-question cost of a cache miss (key digest + store) and of a hit (key digest +
read) in a fresh SQLite file, next to asking a MockJudge directly (the floor: no I/O).
Run: .venv/bin/python benchmarks/bench_reports_cache.py
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.baseline import baseline_from_results
from canon.core.compare import gate
from canon.core.constitution import Constitution, Principle
from canon.core.scoring import Answer, ArtifactResult, judge_verdict, score_cell
from canon.judge.base import JudgeRequest
from canon.judge.cache import AnswerCache, CachingJudge
from canon.judge.mock import MockJudge
from canon.project.store import load_rubric
from canon.report.html import html_report
from canon.report.junit import junit_xml

ARTIFACTS = 1_000
QUESTIONS_ASKED = 2_000
REPEATS = 5


class _IdentifiedMock(MockJudge):
    """A MockJudge that may be cached, so the cache's own cost can be timed."""

    def cache_identity(self) -> dict[str, Any]:
        return {"model": "bench"}


def _results(questions: Any, shift: int) -> list[ArtifactResult]:
    palette = [Answer({"yes": 1.0}), Answer({"partly": 1.0}), Answer({"no": 1.0})]
    clean = Answer({"no": 1.0})  # the gate question: no contradiction

    def cells(a: int) -> list[Any]:
        return [
            score_cell(q, clean if q.kind == "gate" else palette[(a + i + shift) % 3])
            for i, q in enumerate(questions)
        ]

    return [judge_verdict(f"artifact-{a}", cells(a), 0.6) for a in range(ARTIFACTS)]


def _time(label: str, action: Callable[[], object], per: int = 1, unit: str = "s") -> None:
    timings = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        timings.append((time.perf_counter() - start) / per)
    scale = {"s": 1, "us": 1e6}[unit]
    print(f"{label}: median {statistics.median(timings) * scale:.3f} {unit} over {REPEATS} runs")


def _reports(plan: ScoringPlan, questions: Any) -> None:
    accepted, current = _results(questions, 0), _results(questions, 1)
    baseline = baseline_from_results(
        accepted, rubric=plan.rubric, judge="mock", constitution="c", threshold=0.6
    )
    comparison = gate(current, baseline, 0.6)
    html = html_report(current, plan, suite="bench", comparison=comparison)
    xml = junit_xml(current, plan, suite="bench", comparison=comparison)
    print(
        f"{ARTIFACTS} artifacts x {len(questions)} questions: JUnit {len(xml) / 1e6:.2f} MB, "
        f"HTML {len(html) / 1e6:.2f} MB"
    )
    _time("JUnit XML, score", lambda: junit_xml(current, plan, suite="bench"))
    _time("JUnit XML, check", lambda: junit_xml(current, plan, suite="b", comparison=comparison))
    _time("HTML, score", lambda: html_report(current, plan, suite="bench"))
    _time("HTML, check", lambda: html_report(current, plan, suite="bench", comparison=comparison))


def _cache(plan: ScoringPlan, questions: Any) -> None:
    requests = [
        JudgeRequest(
            questions[n % len(questions)],
            Artifact(f"artifact text number {n // len(questions)} " * 20),
            plan.constitution,
            plan.rubric.instructions,
        )
        for n in range(QUESTIONS_ASKED)
    ]

    def ask_all(judge: Any) -> None:
        async def go() -> None:
            for request in requests:
                await judge.answer(request)

        asyncio.run(go())

    script = {"__default__": "yes"}
    _time("MockJudge alone", lambda: ask_all(MockJudge(script)), QUESTIONS_ASKED, "us")
    with tempfile.TemporaryDirectory() as scratch:
        counter = iter(range(10**6))

        def misses() -> None:
            cache = AnswerCache(Path(scratch) / f"miss{next(counter)}.sqlite3")
            ask_all(CachingJudge(_IdentifiedMock(script), cache))
            cache.close()

        _time("cache miss (key + store)", misses, QUESTIONS_ASKED, "us")
        warm = AnswerCache(Path(scratch) / "warm.sqlite3")
        ask_all(CachingJudge(_IdentifiedMock(script), warm))
        _time(
            "cache hit (key + read)",
            lambda: ask_all(CachingJudge(_IdentifiedMock(script), warm)),
            QUESTIONS_ASKED,
            "us",
        )
        warm.close()


def main() -> None:
    """Print the timings."""
    rubric = load_rubric()
    principles = tuple(Principle(f"principle number {i}") for i in range(4))
    constitution = Constitution("a mission", principles)
    questions = rubric.questions_for(constitution)
    plan = ScoringPlan(constitution, rubric, MockJudge({"__default__": "yes"}), 0.6)
    _reports(plan, questions)
    _cache(plan, questions)


if __name__ == "__main__":
    main()

"""A baseline answers for one judge: a run judged by another is refused, not compared.

Two judges disagree on some answers however good both are, so comparing a new judge's run
with an old judge's baseline reports the judges' differences as the agent's regressions.
``canon rejudge`` compares the judges instead; the CLI and the pytest baselines refuse here.
"""

from __future__ import annotations

from canon.core.baseline import Baseline
from canon.errors import BaselineError


class JudgeChangedError(BaselineError):
    """The baseline was judged by another judge: compare the judges, not the runs."""


def judge_change(baseline: Baseline, judge: str, *, source: str) -> str | None:
    """What changed, when ``judge`` is not the judge the baseline recorded; else None."""
    if baseline.judge is None or baseline.judge == judge:
        return None
    return f"judge changed (baseline {source} judged by {baseline.judge}, this run by {judge})"


def refuse_changed_judge(baseline: Baseline, judge: str, *, source: str, remedy: str) -> None:
    """Raise ``JudgeChangedError`` (exit 2) when the run's judge is not the baseline's."""
    change = judge_change(baseline, judge, source=source)
    if change is not None:
        raise JudgeChangedError(f"{change}: {remedy}; no regression was looked for")


def as_judge_option(name: str) -> str:
    """A judge's recorded name as ``--judge`` takes it (litellm's provider/model becomes
    provider:model; a ``mock:`` name stays)."""
    if name.startswith("mock:"):
        return name
    provider, _, model = name.partition("/")
    return f"{provider}:{model}" if model else name

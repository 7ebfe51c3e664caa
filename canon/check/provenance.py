"""A baseline answers for one judge: a run judged by another is refused, not compared.

Two judges disagree on some answers however good both are, so comparing a new judge's run
with an old judge's baseline reports the judges' differences as the agent's regressions.
``canon rejudge`` compares the judges instead; the CLI and the pytest baselines refuse here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from canon.core.baseline import Baseline
from canon.errors import BaselineError, ConfigError
from canon.judge.base import Judge, innermost, wrapped

T = TypeVar("T")


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


def answering_models(judge: Judge) -> tuple[str, ...]:
    """The models a judge's responses said answered so far (a decision judge names the
    versioned model behind its name); empty when it does not say."""
    return tuple(getattr(innermost(judge), "answered_by", ()) or ())


def refuse_alias(judge: Judge) -> None:
    """Refuse to record a baseline judged by a model name that moves with releases (an
    alias such as ``jev-latest``): its answers may change with no change in the project, and
    a check would read the judge's new release as the agent's regressions."""
    inner = innermost(judge)
    if not getattr(inner, "alias", False):
        return
    wire = inner.client.wire
    pins = ", ".join(f"{wire.name}:{version}" for version in wire.versions)
    seen = answering_models(judge)
    answered = f" (it answered as {', '.join(seen)})" if seen else ""
    raise ConfigError(
        f"judge_model {judge.name} is an alias that moves with releases{answered}; a baseline "
        f"must be judged by a pinned model: set judge_model to a versioned one ({pins})"
    )


def answering_change(baseline: Baseline, models: Sequence[str], *, source: str) -> str | None:
    """What changed, when the models that answered this run are not the ones that answered
    the baseline (the same judge name served by another release); else None."""
    if baseline.answered_by is None or not models:
        return None
    if set(models) <= set(baseline.answered_by):
        return None
    return (
        f"judge changed ({source} was answered by {', '.join(baseline.answered_by)}, this "
        f"run by {', '.join(sorted(set(models)))}, both as {baseline.judge})"
    )


def reads_probabilities(judges: Sequence[Judge | None]) -> bool | None:
    """Whether the first model judge of ``judges`` reads its answers from log-probabilities
    (None: none has such a setting, a scripted or decision judge), for the baseline to say."""
    return _model_setting(judges, "reads_probabilities", bool)


def samples_asked(judges: Sequence[Judge | None]) -> int | None:
    """How many answers an ask the first model judge of ``judges`` asked for (None: none
    has such a setting), for the baseline to say."""
    return _model_setting(judges, "samples", int)


def _model_setting(judges: Sequence[Judge | None], name: str, kind: type[T]) -> T | None:
    """The first of ``judges`` whose innermost judge has ``name`` of ``kind`` (a bool is not
    an int here): that value, or None."""
    for judge in judges:
        found = None if judge is None else getattr(innermost(judge), name, None)
        if isinstance(found, kind) and (kind is bool or not isinstance(found, bool)):
            return found
    return None


@dataclass(frozen=True, slots=True)
class ReadAsRecorded:
    """A model judge set to read its answers as its baseline's judge did, for a check to say."""

    judge: str  # the judge's name
    labels: bool  # it reads labels alone, not the log-probabilities it would by default
    samples: int | None  # it asks this many answers an ask, not its default; None: unchanged


def read_as_recorded(
    judges: Sequence[Judge | None], baseline: Baseline, *, source: str = "the baseline"
) -> list[ReadAsRecorded]:
    """Have model judges read their answers as ``baseline``'s judge did: from labels alone or
    from log-probabilities, and from one answer an ask or several. A distribution puts some
    mass below a sure label, so scores read one way do not compare with scores read another
    (every score would seem to drop).

    A judge whose ``logprobs`` is ``auto`` reads labels against a baseline judged from labels
    (or older than format 7, when judges read labels unless told otherwise), and one whose
    ``samples`` is ``auto`` asks as many answers an ask as the baseline says (one, before
    format 8); each such change is returned, so a check can say so and that ``canon accept``
    records the judge's default reading. A judge told ``logprobs`` or ``samples`` against a
    baseline recorded another way is refused (``JudgeChangedError``, exit 2), as a changed
    judge is."""
    changed = []
    for judge in judges:
        if judge is None:
            continue
        inner = innermost(judge)
        setting = getattr(inner, "logprobs", None)
        if setting not in (True, False, "auto"):
            continue  # no such setting: a scripted or decision judge
        labels = False
        if setting == "auto":
            # Only a judge that would read probabilities has anything to change; asked only
            # then, since knowing may mean asking litellm's tables (an import of seconds).
            if baseline.logprobs is not True and reads_probabilities((judge,)):
                inner.read_labels()
                labels = True
        elif baseline.logprobs is not None and setting != baseline.logprobs:
            ways = {True: "log-probabilities", False: "labels alone"}
            raise JudgeChangedError(
                f"judge changed ({source} was judged from {ways[baseline.logprobs]}, and "
                f"{judge.name} reads {ways[setting]} in this run: their scores do not "
                "compare): run canon accept to record a baseline read this way"
                + ("" if baseline.logprobs else ", or set judge_options logprobs: auto")
                + "; no regression was looked for"
            )
        samples = _sample_as_recorded(inner, judge.name, baseline, source)
        if labels or samples is not None:
            for layer in wrapped(judge):
                renew = getattr(layer, "renew_identity", None)
                if renew is not None:
                    renew()
            changed.append(ReadAsRecorded(judge.name, labels, samples))
    return changed


def _sample_as_recorded(inner: Any, name: str, baseline: Baseline, source: str) -> int | None:
    """Set a judge at ``samples: auto`` to the baseline's answers an ask, returning them when
    that changed its default; refuse one set to another number than the baseline says."""
    sampling = getattr(inner, "sampling", None)
    recorded = baseline.samples
    if sampling != "auto":
        if recorded is None or sampling is None or sampling == recorded:
            return None
        raise JudgeChangedError(
            f"judge changed ({source} was judged asking {answers_phrase(recorded)} an ask, and "
            f"{name} asks {answers_phrase(sampling)} in this run: their scores do not "
            "compare): run canon accept to record a baseline judged this way, or set "
            f"judge_options samples: {recorded}; no regression was looked for"
        )
    wanted = 1 if recorded is None else recorded
    if wanted == 1 and baseline.logprobs is True:
        return None  # it reads probabilities as the baseline did: one answer, as auto asks
    if inner.samples == wanted:
        return None
    inner.sample_as(wanted)
    return wanted


def answers_phrase(count: int) -> str:
    """``count`` answers in words: "one answer", "3 answers"."""
    return "one answer" if count == 1 else f"{count} answers"

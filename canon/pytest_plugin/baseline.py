"""Baselines inside pytest: ``canon_baseline.check(artifact, id=...)`` and ``--canon-accept``.

In the manner of snapshot testing: a normal run compares each checked artifact with its
recorded baseline using the same decision rule as ``canon check`` (``canon.check``), and
``pytest --canon-accept`` records what the tests produce instead. Records are queued during
the run and written once, atomically, at the end; under pytest-xdist each worker hands its
records to the controller, which merges them and writes the file once.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from canon.check.capture import traced_artifact
from canon.check.metric import CoherenceMetric
from canon.check.pipeline import baseline_from_run, compare_run, score_run, suite_cells
from canon.check.provenance import read_as_recorded, refuse_changed_judge
from canon.core.artifact import Artifact
from canon.core.baseline import Baseline, baseline_to_data, require_same_rubric
from canon.core.compare import Comparison
from canon.core.evidence import Power
from canon.core.scoring import ArtifactResult
from canon.errors import JudgeUnavailableError
from canon.judge.sync import run_sync
from canon.project.baselines import baseline_file, read_baseline, write_baseline_data
from canon.project.config import Config
from canon.pytest_plugin.telemetry import EventRecorder
from canon.report.check import render_check

ACCEPT_HINT = "run pytest --canon-accept to record it"
WORKER_KEY = "canon_baseline"


@dataclass
class BaselineSession:
    """What one pytest session checked and recorded."""

    accept: bool
    name: str
    path: Path | None = None
    baseline: Baseline | None = None
    loaded: bool = False
    header: dict[str, Any] | None = None  # rubric, judge, constitution, threshold
    pending: dict[str, Any] = field(default_factory=dict)  # key -> record data
    outcomes: list[tuple[str, str, str]] = field(default_factory=list)  # key, status, detail
    # Responses read as violated where the artifact's others were not, and the readings, over
    # the session's tests so far: a test checks one artifact, too few readings to measure the
    # misreading rate a replicated artifact's responses are tested at (canon check measures
    # it over the whole run); the session adds them up as the run does.
    strays: tuple[int, int] = (0, 0)

    def load(self, config: Config) -> Baseline | None:
        """The session's baseline file, read once (the baseline store's reader and limits)."""
        if not self.loaded:
            self.path = baseline_file(config, self.name)
            if os.path.lexists(self.path):
                self.baseline = read_baseline(self.path)
            self.loaded = True
        return self.baseline

    def export(self) -> dict[str, Any]:
        """What an xdist worker hands to the controller."""
        return {"header": self.header, "pending": self.pending, "outcomes": self.outcomes}

    def absorb(self, part: dict[str, Any]) -> None:
        """Merge a worker's part into this (controller) session."""
        if part.get("header") is not None:
            self.header = part["header"]
        self.pending.update(part.get("pending", {}))
        self.outcomes.extend(tuple(o) for o in part.get("outcomes", []))

    def flush(self, config: Config | None) -> Path | None:
        """Write the accepted records once, merged over the existing baseline's."""
        if not self.accept or not self.pending or self.header is None:
            return None
        if config is not None:
            self.load(config)
        if self.path is None:
            return None
        existing: dict[str, Any] = {}
        if self.baseline is not None and self.baseline.rubric_version == self.header["rubric"].get(
            "version"
        ):
            existing = baseline_to_data(self.baseline)["artifacts"]
        document = {**self.header, "artifacts": {**existing, **self.pending}}
        write_baseline_data(self.path, document)
        return self.path


class CanonBaseline:
    """The ``canon_baseline`` fixture: check artifacts against the recorded baseline."""

    def __init__(
        self,
        session: BaselineSession,
        metric: CoherenceMetric,
        config: Config,
        node: pytest.Item,
        *,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._session = session
        self._metric = metric
        self._config = config
        self._node = node
        self._recorder = recorder  # keeps each verdict for --canon-otel
        self._count = 0

    def check(
        self,
        artifact: object,
        *,
        id: str | None = None,
        input: object = None,
        context: object = None,
        trace: object = None,
    ) -> ArtifactResult:
        """Compare one artifact with its baseline record (or record it under --canon-accept);
        ``input`` and ``context`` are what it answered and what the agent had, ``trace`` its
        run (a ``canon_trace`` capture: the request is read from it when no input is given)."""
        self._count += 1
        item = traced_artifact(artifact, input=input, context=context, trace=trace)
        key = id or item.id or f"{self._node.nodeid}#{self._count}"
        item = dataclasses.replace(item, id=key)
        plan, rule = self._metric.plan, self._metric.rule
        baseline = self._session.load(self._config)
        if baseline is not None:
            require_same_rubric(baseline, plan.rubric, source=str(self._session.path))
            if not self._session.accept:
                refuse_changed_judge(
                    baseline,
                    plan.judge.name,
                    source=str(self._session.path),
                    remedy=f"compare the judges, then {ACCEPT_HINT}",
                )
                # read the answers as the baseline's were read, so the two compare
                read_as_recorded(
                    (plan.judge, plan.confirm_judge), baseline, source=str(self._session.path)
                )
        self._node.user_properties.append(("canon.key", key))
        if self._session.accept:
            return self._record(item, key)
        if baseline is None or key not in baseline.artifacts:
            self._outcome(key, "missing", "no baseline record")
            pytest.fail(
                f"canon: no baseline record for {key!r} in {self._session.path}; {ACCEPT_HINT}",
                pytrace=False,
            )
        one = dataclasses.replace(baseline, artifacts={key: baseline.artifacts[key]})
        budget = suite_cells(plan, baseline)  # the whole suite's, as canon check splits it
        confirmation = run_sync(
            score_run(
                plan, [item], rule, baseline=one, budget_cells=budget, prior=self._session.strays
            )
        )
        self._measured(confirmation.power)
        comparison = compare_run(plan, confirmation, one, self._config.tolerance, rule)
        (result,) = confirmation.results
        if self._recorder is not None:
            self._recorder.add(plan, item, result, suite=self._session.name, comparison=comparison)
        self._node.user_properties.append(("canon.status", comparison.status))
        if result.score is not None:
            self._node.user_properties.append(("canon.score", f"{result.score:.4f}"))
        if comparison.status == "unavailable":
            self._outcome(key, "unavailable", "the judge left questions unanswered")
            raise JudgeUnavailableError(
                f"canon: the judge could not answer every question about {key!r}; "
                "run the tests again when it is reachable"
            )
        if comparison.status in ("regressed", "inconclusive"):
            report = render_check(
                comparison,
                one,
                suite=self._session.name,
                path=str(self._session.path),
                results=confirmation.results,
                reaccept=ACCEPT_HINT,  # this door's remedy, the one the report ends with
            )
            verdict = (
                "is inconclusive against its baseline (the judge is too noisy to tell)"
                if comparison.status == "inconclusive"
                else "regressed against its baseline"
            )
            self._outcome(key, "regressed", _first_failure(comparison))
            pytest.fail(
                f"canon: {key!r} {verdict}\n{report}",
                pytrace=False,
            )
        self._outcome(key, "conforms", "")
        return result

    def _record(self, item: Artifact, key: str) -> ArtifactResult:
        plan, rule = self._metric.plan, self._metric.rule
        confirmation = run_sync(
            score_run(plan, [item], rule, record=True, prior=self._session.strays)
        )
        self._measured(confirmation.power)
        (result,) = confirmation.results
        if self._recorder is not None:
            self._recorder.add(plan, item, result, suite=self._session.name)
        if result.unscored:
            self._outcome(key, "unavailable", "not recorded: questions unanswered")
            raise JudgeUnavailableError(
                f"canon: the judge could not answer every question about {key!r}; nothing "
                "was recorded for it"
            )
        data = baseline_to_data(baseline_from_run(plan, confirmation))
        self._session.header = {k: v for k, v in data.items() if k != "artifacts"}
        self._session.pending[key] = data["artifacts"][key]
        self._outcome(key, "accepted", "canon" if result.canon else "non-canon (known)")
        self._node.user_properties.append(("canon.status", "accepted"))
        return result

    def _measured(self, power: Power) -> None:
        # the session's readings so far, this test's included
        self._session.strays = (power.strays, power.readings)

    def _outcome(self, key: str, status: str, detail: str) -> None:
        self._session.outcomes.append((key, status, detail))


def _first_failure(comparison: Comparison) -> str:
    """What failed first, for the session summary: from the comparison's values."""
    for flip in comparison.regressions:
        return f"{flip.label} flipped from satisfied to violated"
    for failure in comparison.failures:
        return f"non-canon: {failure.reasons[0]}" if failure.reasons else "non-canon"
    if comparison.drift.regressed:
        return "the mean score dropped beyond noise (Layer 2)"
    if comparison.inconclusive:
        return f"inconclusive: {comparison.inconclusive[0]}"
    return comparison.status


def summary_lines(session: BaselineSession, written: Path | None) -> list[str]:
    """The terminal summary: counts, each regression, and the remedy."""
    if not session.outcomes:
        return []
    counts: dict[str, int] = {}
    for _key, status, _detail in session.outcomes:
        counts[status] = counts.get(status, 0) + 1
    order = ("conforms", "regressed", "missing", "unavailable", "accepted")
    parts = [f"{counts[s]} {s}" for s in order if s in counts]
    lines = [
        f"canon baselines ({session.name}): {len(session.outcomes)} checked: " + ", ".join(parts)
    ]
    for key, status, detail in session.outcomes:
        if status in ("regressed", "missing", "unavailable"):
            lines.append(f"  {status.upper()} {key}: {detail}")
    if written is not None:
        lines.append(f"recorded {len(session.pending)} artifact(s) -> {written}")
    elif counts.get("regressed") or counts.get("missing"):
        lines.append(f"if the changes are intended, {ACCEPT_HINT.replace(' it', ' them')}")
    return lines

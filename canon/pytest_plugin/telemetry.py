"""``--canon-otel``: what the plugin's fixtures judged, sent as OpenTelemetry events at the end.

Every verdict ``canon_metric`` reaches (``assert_coheres``, ``score``) and every artifact
``canon_baseline`` checks or records is kept during the session and sent once, at its end,
as the same ``gen_ai.evaluation.result`` events ``canon score --otel`` sends. Telemetry never
changes a test's outcome: a failed send is one warning line in the terminal summary.
Under pytest-xdist each worker sends what it judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from canon.check.confirm import Confirmation
from canon.check.metric import CoherenceMetric
from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.compare import Comparison
from canon.core.scoring import ArtifactResult
from canon.errors import UsageError
from canon.project.config import Config

ENABLE_VARIABLE = "CANON_OTEL"
STRICT_VARIABLE = "CANON_OTEL_STRICT"
METRIC_SUITE = "pytest"  # the canon.suite of verdicts reached through canon_metric
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def otel_enabled(option: bool, config: Config | None, environ: Mapping[str, str]) -> bool:
    """Whether to send: ``--canon-otel`` decides, then CANON_OTEL (or CANON_OTEL_STRICT=1),
    then canon.yaml's ``otel`` (``strict`` sends as ``true`` does: tests keep their outcome)."""
    if option:
        return True
    if _switch(environ, STRICT_VARIABLE):
        return True
    said = _switch(environ, ENABLE_VARIABLE)
    if said is not None:
        return said
    return config is not None and config.otel != "off"


def _switch(environ: Mapping[str, str], name: str) -> bool | None:
    text = environ.get(name, "").strip()
    if not text:
        return None
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise UsageError(f"{name}={text!r}: expected 1 or 0 (true or false)")


@dataclass(frozen=True, slots=True)
class _Judged:
    plan: ScoringPlan
    artifact: Artifact
    result: ArtifactResult
    suite: str
    comparison: Comparison | None


@dataclass
class EventRecorder:
    """What the session's fixtures judged, in order, for one send at the end."""

    judged: list[_Judged] = field(default_factory=list)

    def add(
        self,
        plan: ScoringPlan,
        artifact: Artifact,
        result: ArtifactResult,
        *,
        suite: str,
        comparison: Comparison | None = None,
    ) -> None:
        """Keep one judged artifact (with its baseline comparison, when it was checked)."""
        self.judged.append(_Judged(plan, artifact, result, suite, comparison))

    def send(self, version: str) -> list[str]:
        """Send every kept verdict's events; the lines the terminal summary shows."""
        from canon.report.otel_events import evaluation_events
        from canon.report.otel_export import send_events, trace_links

        links, notes = trace_links([item.artifact for item in self.judged])
        lines = [f"canon: otel: note: {note}; its events are not parented" for note in notes]
        events = [
            event
            for item in self.judged
            for event in evaluation_events(
                [item.result],
                item.plan,
                links=links,
                suite=item.suite,
                comparison=item.comparison,
            )
        ]
        summary = send_events(events, version=version)
        if summary.disabled:
            lines.append("canon: otel: OTEL_SDK_DISABLED is true; no events were sent")
        elif summary.complete:
            lines.append(
                f"canon: otel: sent {summary.sent} gen_ai.evaluation.result event(s) for "
                f"{len(self.judged)} artifact(s) to {summary.endpoint}"
            )
        else:
            problem = (summary.problem or "no reason given").rstrip(". ")
            lines.append(
                f"canon: otel: warning: the OTLP endpoint {summary.endpoint} took "
                f"{summary.sent} of {summary.total} event(s): {problem}; the test outcomes "
                "are unchanged"
            )
        return lines


class ReportingMetric(CoherenceMetric):
    """The ``canon_metric`` of a session that sends events: each verdict is also kept."""

    _recorder: EventRecorder

    def __init__(self, recorder: EventRecorder, **options: Any) -> None:
        super().__init__(**options)
        self._recorder = recorder

    @classmethod
    def recording(cls, recorder: EventRecorder, plan: ScoringPlan) -> ReportingMetric:
        """A metric scoring with ``plan`` whose verdicts ``recorder`` keeps."""
        metric = cls.from_plan(plan)
        metric._recorder = recorder
        return metric

    async def _confirmed(
        self, artifact: object, input: object, context: object, trace: object
    ) -> Confirmation:
        """Score as CoherenceMetric does, and keep the verdict for the session's events."""
        from canon.check.capture import traced_artifact

        item = traced_artifact(artifact, input=input, context=context, trace=trace)
        confirmation = await super()._confirmed(item, None, None, None)
        self._recorder.add(self.plan, item, confirmation.results[0], suite=METRIC_SUITE)
        return confirmation

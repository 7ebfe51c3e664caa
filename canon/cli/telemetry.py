"""``--otel``: send a run's verdicts and answers as OpenTelemetry evaluation events."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from canon.check.runner import ScoringPlan
from canon.core.artifact import Artifact
from canon.core.compare import Comparison
from canon.core.scoring import ArtifactResult
from canon.errors import ExitCode, TelemetryExportError
from canon.project.config import Config, OtelMode

F = TypeVar("F", bound=Callable[..., Any])

ENABLE_VARIABLE = "CANON_OTEL"
STRICT_VARIABLE = "CANON_OTEL_STRICT"


@dataclass(frozen=True, slots=True)
class OtelRequest:
    """The user asked for events: where they go, and whether a failed send fails the run."""

    endpoint: str
    strict: bool = False


@dataclass(frozen=True, slots=True)
class OtelChoice:
    """What the command line and the environment said about sending events: ``off``, ``on``
    or ``strict``, or None when neither said anything and canon.yaml's ``otel`` decides."""

    mode: OtelMode | None = None

    def request(self, config: Config) -> OtelRequest | None:
        """The request for this run (flag > CANON_OTEL > canon.yaml); a setup that could not
        send is refused here, before any judge call (exit 2)."""
        mode = self.mode if self.mode is not None else config.otel
        if mode == "off":
            return None
        from canon.report.otel_export import check_telemetry

        return OtelRequest(check_telemetry(), strict=mode == "strict")


_otel_flag = click.option(
    "--otel/--no-otel",
    "otel_flag",
    default=False,
    envvar=ENABLE_VARIABLE,
    help="Also send each verdict and each question's answer as an OpenTelemetry "
    "gen_ai.evaluation.result event over OTLP/HTTP (endpoint from OTEL_EXPORTER_OTLP_ENDPOINT; "
    f"needs canon-testing[otel]; or set {ENABLE_VARIABLE}=1, or otel: true in canon.yaml). "
    "A failed send is a warning. --no-otel sends nothing whatever the environment or "
    "canon.yaml say.",
)
_strict_flag = click.option(
    "--otel-strict",
    "otel_strict",
    is_flag=True,
    envvar=STRICT_VARIABLE,
    help="Like --otel, but exit 3 when the endpoint did not take every event and the run "
    "itself would exit 0 (or otel: strict in canon.yaml).",
)


def otel_choice(
    flag: bool,
    flag_source: ParameterSource | None,
    strict: bool,
    strict_source: ParameterSource | None,
) -> OtelChoice:
    """The command line decides, then the environment; when neither says anything, None."""
    given, environment = ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT
    if flag_source == given and not flag:
        return OtelChoice("off")  # --no-otel
    if strict and strict_source in (given, environment):
        return OtelChoice("strict")  # --otel-strict or CANON_OTEL_STRICT=1, as always
    if flag_source in (given, environment):
        return OtelChoice("on" if flag else "off")  # --otel, or CANON_OTEL=1 / 0
    return OtelChoice()


def otel_options(command: F) -> F:
    """Add --otel/--no-otel and --otel-strict; the command receives ``otel`` (an
    OtelChoice) and turns it into a request with ``otel.request(config)``."""

    @functools.wraps(command)
    def wrapper(*args: Any, otel_flag: bool, otel_strict: bool, **kwargs: Any) -> Any:
        context = click.get_current_context()
        choice = otel_choice(
            otel_flag,
            context.get_parameter_source("otel_flag"),
            otel_strict,
            context.get_parameter_source("otel_strict"),
        )
        return command(*args, otel=choice, **kwargs)

    return _otel_flag(_strict_flag(wrapper))  # type: ignore[return-value]


def send_telemetry(
    request: OtelRequest | None,
    results: Sequence[ArtifactResult],
    plan: ScoringPlan,
    *,
    artifacts: Sequence[Artifact],
    suite: Path,
    exit_code: ExitCode,
    quiet: bool = False,
    comparison: Comparison | None = None,
) -> None:
    """Send the run's events when asked. A failed send is one warning on stderr and leaves
    the verdict alone; with --otel-strict it raises (exit 3) only if the run would exit 0."""
    if request is None:
        return
    from canon.report.otel_events import evaluation_events
    from canon.report.otel_export import canon_version, send_events, trace_links
    from canon.report.text import printable

    links, notes = trace_links(artifacts)
    for note in notes:
        click.echo(f"canon: otel: note: {printable(note)}; its events are not parented", err=True)
    events = evaluation_events(results, plan, links=links, suite=suite.stem, comparison=comparison)
    summary = send_events(events, version=canon_version())
    if summary.disabled:
        click.echo("canon: otel: OTEL_SDK_DISABLED is true; no events were sent", err=True)
        return
    if summary.complete:
        if not quiet:
            click.echo(
                f"canon: otel: sent {summary.sent} gen_ai.evaluation.result event(s) to "
                f"{summary.endpoint}",
                err=True,
            )
        return
    message = (
        f"the OTLP endpoint {summary.endpoint} took {summary.sent} of {summary.total} "
        f"event(s): {printable((summary.problem or 'no reason given').rstrip('. '))}"
    )
    if request.strict and exit_code == ExitCode.OK:
        raise TelemetryExportError(
            f"{message}; the verdicts stand; run again when the endpoint is reachable"
        )
    # A warning, not an error: the exit code must keep saying what the run found.
    click.echo(f"canon: warning: {message}; the verdicts are unchanged", err=True)

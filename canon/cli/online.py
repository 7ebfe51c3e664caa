"""The options every monitor shares for judging live traces: ``--judge``, ``--sample``,
``--salt``, ``--budget``, ``--config`` and ``--otel`` (verdict events parented to the trace)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from canon.cli.common import config_option
from canon.cli.telemetry import OtelChoice, OtelRequest, otel_options
from canon.core.online import DEFAULT_SALT, MonitorSettings
from canon.errors import UsageError
from canon.gates.contracts.execution import Execution
from canon.monitor.judging import Budget, Judged, LocalBudget, OnJudged, OnlineJudge

if TYPE_CHECKING:
    from canon.project.config import Config

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class JudgeChoice:
    """What the command line said about judging; each option left out (None) takes its
    default from canon.yaml's ``monitor:`` section, else the built-in one."""

    enabled: bool | None  # --judge / --no-judge, None: monitor.judge
    config_path: Path | None
    sample: float | None
    salt: str | None
    budget: float | None
    otel: OtelChoice

    def given_without_judge(self) -> str | None:
        """The judging option given without ``--judge`` (it would do nothing), if any."""
        if self.enabled:
            return None
        for flag, value in (("--sample", self.sample), ("--budget", self.budget)):
            if value is not None:
                return flag
        return None if self.salt is None else "--salt"

    def settings(self) -> MonitorSettings:
        """The judging settings in force: the flags over canon.yaml's ``monitor:`` section
        (a project without a canon.yaml has none; a bad section is exit 2 naming the file)."""
        return self._resolve()[0]

    def _resolve(self) -> tuple[MonitorSettings, Config]:
        from canon.project.config import load_config

        config = load_config(self.config_path, required=self.enabled is True)
        found = config.monitor
        chosen = MonitorSettings(
            judge=found.judge if self.enabled is None else self.enabled,
            sample=_first(self.sample, found.sample, 1.0),
            salt=self.salt if self.salt is not None else found.salt or DEFAULT_SALT,
            budget=_first(self.budget, found.budget, None),
            settle=found.settle,
            settle_max=found.settle_max,
        )
        return chosen, config

    def build(
        self, budget: Callable[[float], Budget] | None = None
    ) -> tuple[OnlineJudge | None, OnJudged | None]:
        """The online judge and the sender of its verdict events (None when not judging).
        ``budget`` makes the shared budget from ``--budget`` (default: this process's)."""
        chosen, config = self._resolve()
        stray = self.given_without_judge()
        if stray is not None and not chosen.judge:
            raise UsageError(
                f"{stray} goes with --judge (judge a sample of the traces; or monitor: judge: "
                "true in canon.yaml)"
            )
        if not chosen.judge:
            return None, None
        from canon.check.plan import build_plan
        from canon.project.config import load_env_files

        load_env_files(config.source.parent if config.source else config.base_dir)
        request = self.otel.request(config)  # a telemetry set-up that cannot send: exit 2 now
        plan = build_plan(config)
        shared = None
        if chosen.budget is not None:
            shared = (budget or LocalBudget)(chosen.budget)
        rate = 1.0 if chosen.sample is None else chosen.sample
        judge = OnlineJudge(plan, rate=rate, salt=chosen.salt or DEFAULT_SALT, budget=shared)
        return judge, None if request is None else _sender(request, judge)


def _first(flag: float | None, configured: float | None, default: float | None) -> float | None:
    """The flag's value, else canon.yaml's, else the default."""
    if flag is not None:
        return flag
    return configured if configured is not None else default


def _sender(request: OtelRequest, judge: OnlineJudge) -> OnJudged:
    """Send a judged trace's verdict and answers as events parented to the trace's root."""

    def send(judged: Judged, execution: Execution) -> None:
        from canon.report.otel_events import evaluation_events, trace_link
        from canon.report.otel_export import canon_version, send_events

        assert judged.result is not None
        link = trace_link(execution)
        links = {} if link is None else {judged.result.key: link}
        events = evaluation_events([judged.result], judge.plan, links=links)
        summary = send_events(events, version=canon_version())
        if not summary.complete and not summary.disabled:
            click.echo(
                f"canon: warning: the OTLP endpoint {summary.endpoint} took {summary.sent} of "
                f"{summary.total} event(s) for trace {execution.execution_id}: "
                f"{summary.problem or 'no reason given'}",
                err=True,
            )

    return send


def judge_options(command: F) -> F:
    """Add the judging options; the command receives ``judging`` (a JudgeChoice)."""

    @functools.wraps(command)
    def wrapper(
        *args: Any,
        judge_flag: bool | None,
        config_path: Path | None,
        sample: float | None,
        salt: str | None,
        budget: float | None,
        otel: OtelChoice,
        **kwargs: Any,
    ) -> Any:
        choice = JudgeChoice(judge_flag, config_path, sample, salt, budget, otel)
        return command(*args, judging=choice, **kwargs)

    options = [
        click.option(
            "--judge/--no-judge",
            "judge_flag",
            default=None,
            help="Also judge each trace's answer against the project's constitution with its "
            "judge (from canon.yaml), after the contract: a decision per trace goes into its "
            "record (sampled-out, judged, budget-dropped, unscored, gate-failed, late). "
            "[default: monitor.judge in canon.yaml, else off]",
        ),
        config_option,
        click.option(
            "--sample",
            type=click.FloatRange(0, 1),
            default=None,
            help="Share of traces to judge, chosen by sha256(salt, trace id): the same traces "
            "on every worker and every restart. [default: monitor.sample in canon.yaml, "
            "else 1]",
        ),
        click.option(
            "--salt",
            default=None,
            help="The sampling salt (another salt samples other traces). "
            f"[default: monitor.salt in canon.yaml, else {DEFAULT_SALT}]",
        ),
        click.option(
            "--budget",
            type=click.FloatRange(min=0),
            default=None,
            help="Dollars the judge may spend per UTC day; a sampled trace over it is "
            "budget-dropped (never a pass or a failure). [default: monitor.budget in "
            "canon.yaml, else no limit]",
        ),
    ]
    wrapped: Any = otel_options(wrapper)
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped  # type: ignore[no-any-return]

"""Canon's pytest plugin: fixtures that build a CoherenceMetric from the project's config.

Registered through the ``pytest11`` entry point, so it loads in every pytest run where
Canon is installed; it therefore imports nothing heavy until a fixture is used.

A config or judge setting that cannot work makes the fixture raise its ``CanonError``, so
the tests that use it are errors (not failures) naming the file and the problem.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from canon.check.capture import TraceCapture
    from canon.check.metric import CoherenceMetric
    from canon.core.constitution import Constitution
    from canon.project.config import Config
    from canon.pytest_plugin.baseline import BaselineSession, CanonBaseline
    from canon.pytest_plugin.telemetry import EventRecorder

_SESSION = pytest.StashKey["BaselineSession"]()
_CONFIG = pytest.StashKey["Config"]()
_RECORDER = pytest.StashKey["EventRecorder | None"]()  # set once canon_metric is built
_OTEL_LINES = pytest.StashKey["list[str]"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add Canon's command-line options."""
    group = parser.getgroup("canon", "Canon coherence tests")
    group.addoption(
        "--canon-config",
        action="store",
        default=None,
        metavar="FILE",
        help="canon.yaml (or pyproject.toml) for the canon_* fixtures; default: search upward.",
    )
    group.addoption(
        "--canon-no-cache",
        action="store_true",
        default=False,
        help="canon_metric asks the model judge every question anew (no answer cache).",
    )
    group.addoption(
        "--canon-accept",
        action="store_true",
        default=False,
        help="canon_baseline records what the tests check as the new baseline.",
    )
    group.addoption(
        "--canon-baseline",
        action="store",
        default="pytest",
        metavar="NAME",
        help="the baseline file canon_baseline uses: <baselines_dir>/NAME.json (default pytest).",
    )
    group.addoption(
        "--canon-otel",
        action="store_true",
        default=False,
        help="send each verdict canon_metric and canon_baseline reach as an OpenTelemetry "
        "gen_ai.evaluation.result event at the end (OTEL_EXPORTER_OTLP_ENDPOINT; needs "
        "canon-testing[otel]; or CANON_OTEL=1, or otel: true in canon.yaml).",
    )


def pytest_configure(config: pytest.Config) -> None:
    """With --canon-otel, refuse at once a setup that could not send (the SDK, the URL)."""
    if not config.getoption("--canon-otel", default=False):
        return
    from canon.errors import TelemetrySetupError
    from canon.report.otel_export import check_telemetry

    try:
        check_telemetry()
    except TelemetrySetupError as exc:
        message = str(exc).replace("--otel needs", "--canon-otel needs")
        raise pytest.UsageError(f"canon: {message}") from None


@pytest.fixture(scope="session")
def canon_config(request: pytest.FixtureRequest) -> Config:
    """The project's Canon config (its .env files loaded), as ``canon score`` would read it."""
    from canon.project.config import load_config, load_env_files

    explicit = request.config.getoption("--canon-config")
    config = load_config(Path(explicit) if explicit else None)
    load_env_files(config.source.parent if config.source else config.base_dir)
    return config


@pytest.fixture(scope="session")
def canon_constitution(canon_config: Config) -> Constitution:
    """The constitution named by ``constitution_path``."""
    from canon.errors import ConfigError
    from canon.project.store import constitution_from_file

    if canon_config.constitution_path is None:
        raise ConfigError(
            f"{canon_config.source or 'no canon.yaml found'}: set 'constitution_path'"
        )
    return constitution_from_file(canon_config.constitution_path)


@pytest.fixture(scope="session")
def canon_metric(
    request: pytest.FixtureRequest, canon_config: Config, canon_constitution: Constitution
) -> CoherenceMetric:
    """The CoherenceMetric ``canon score`` would build from canon.yaml (one plan: the judge
    and its answer cache, confirm_judge, max_cost, concurrency, the decision rule, the
    threshold and the gates)."""
    from canon.check.plan import build_plan

    plan = build_plan(canon_config, use_cache=not request.config.getoption("--canon-no-cache"))
    recorder = _recorder(request.config, canon_config)
    if recorder is None:
        from canon.check.metric import CoherenceMetric

        return CoherenceMetric.from_plan(plan)
    from canon.pytest_plugin.telemetry import ReportingMetric

    return ReportingMetric.recording(recorder, plan)


def _recorder(config: pytest.Config, canon_config: Config) -> EventRecorder | None:
    """The session's event recorder when it sends events (a setup that cannot send raises)."""
    if _RECORDER not in config.stash:
        from canon.pytest_plugin.telemetry import EventRecorder, otel_enabled

        recorder = None
        if otel_enabled(bool(config.getoption("--canon-otel")), canon_config, os.environ):
            from canon.report.otel_export import check_telemetry

            check_telemetry()  # CANON_OTEL or canon.yaml asked: the fixture errors with why
            recorder = EventRecorder()
        config.stash[_RECORDER] = recorder
    return config.stash[_RECORDER]


def _baseline_session(config: pytest.Config) -> BaselineSession:
    from canon.pytest_plugin.baseline import BaselineSession

    if _SESSION not in config.stash:
        config.stash[_SESSION] = BaselineSession(
            accept=bool(config.getoption("--canon-accept")),
            name=str(config.getoption("--canon-baseline")),
        )
    return config.stash[_SESSION]


@pytest.fixture
def canon_baseline(
    request: pytest.FixtureRequest, canon_config: Config, canon_metric: CoherenceMetric
) -> CanonBaseline:
    """Compare artifacts with the recorded baseline: ``canon_baseline.check(text, id=...)``.

    ``pytest --canon-accept`` records instead; the decision rule is ``canon check``'s.
    """
    from canon.pytest_plugin.baseline import CanonBaseline

    request.config.stash[_CONFIG] = canon_config
    return CanonBaseline(
        _baseline_session(request.config),
        canon_metric,
        canon_config,
        request.node,
        recorder=_recorder(request.config, canon_config),
    )


@pytest.fixture
def canon_trace() -> Iterator[TraceCapture]:
    """The OpenTelemetry spans this test emits (``canon.capture_trace()`` around it): pass
    it as ``assert_coheres(text, trace=canon_trace)`` to run the contract gate on them."""
    from canon.check.capture import capture_trace

    with capture_trace() as capture:
        yield capture


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Send the session's events; hand records to the xdist controller, or write them once."""
    config = session.config
    recorder = config.stash.get(_RECORDER, None)
    if recorder is not None and recorder.judged:
        from canon.report.otel_export import canon_version

        config.stash[_OTEL_LINES] = recorder.send(canon_version())
    if _SESSION not in config.stash:
        return
    state = config.stash[_SESSION]
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller writes
        workeroutput["canon_baseline"] = state.export()
        return
    from canon.errors import CanonError

    try:
        written = state.flush(config.stash.get(_CONFIG, None) or _load_config(config))
    except CanonError as exc:
        raise pytest.UsageError(f"canon: {exc}") from None
    config.stash[_WRITTEN] = written


_WRITTEN = pytest.StashKey["Path | None"]()


def _load_config(config: pytest.Config) -> Config | None:
    from canon.project.config import load_config

    explicit = config.getoption("--canon-config")
    return load_config(Path(explicit) if explicit else None)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: merge what a worker checked and recorded."""
    part = getattr(node, "workeroutput", {}).get("canon_baseline")
    if part:
        _baseline_session(node.config).absorb(part)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Counts, regressions and the remedy, once at the end of the run; what was sent."""
    sent: list[str] = config.stash.get(_OTEL_LINES, [])
    lines = list(sent)
    if _SESSION in config.stash:
        from canon.pytest_plugin.baseline import summary_lines

        lines = summary_lines(config.stash[_SESSION], config.stash.get(_WRITTEN, None)) + lines
    if lines:
        terminalreporter.section("canon")
        for line in lines:
            terminalreporter.write_line(line)

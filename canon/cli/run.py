"""What the commands that score a suite share: options, the scoring plan, progress."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from canon.check.confirm import Confirmation
from canon.check.pipeline import score_run
from canon.check.plan import build_plan as build_plan  # the one plan, for the commands
from canon.check.runner import ScoringPlan
from canon.cli.common import config_option, shown_path
from canon.core.artifact import Artifact
from canon.core.baseline import Baseline
from canon.core.compare import Comparison
from canon.core.scoring import ArtifactResult
from canon.core.verdict import Verdict, first_failure, verdict_of
from canon.errors import ConfigError, UsageError
from canon.judge.cache import CachingJudge
from canon.judge.sync import run_sync
from canon.project.config import Config, load_config, load_env_files
from canon.project.store import write_text_atomic
from canon.project.suite import read_suite, select_artifacts
from canon.report.html import html_report
from canon.report.junit import junit_xml
from canon.report.text import printable

F = TypeVar("F", bound=Callable[..., Any])


class ReportPathError(UsageError):
    """A --junit-xml or --html path cannot be written."""


suite_option = click.option(
    "--suite",
    "suite_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Suite file to score (default: the config's 'suite').",
)
quiet_option = click.option("--quiet", is_flag=True, help="Print no progress lines on stderr.")
no_cache_option = click.option(
    "--no-cache",
    is_flag=True,
    help="Ask the model judge every question anew, without reading or writing its answer cache.",
)
format_option = click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="Text for people, JSON for machines; github adds GitHub Actions annotations to the "
    "text (and a table to $GITHUB_STEP_SUMMARY when it is set).",
)
text_or_json_option = click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Text for people, JSON for machines.",
)
_junit_option = click.option(
    "--junit-xml",
    "junit_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write a JUnit XML report here (written on failures too).",
)
_html_option = click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write a self-contained HTML report here (written on failures too).",
)


_select_option = click.option(
    "--select",
    "select",
    multiple=True,
    metavar="KEY|GLOB",
    help="Run only the artifacts whose key (id) matches; repeat for more, globs allowed.",
)
_limit_option = click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Run at most the first N artifacts (after --select).",
)


def selection_options(command: F) -> F:
    """Add --select KEY|GLOB (repeatable) and --limit N to a command that scores a suite."""
    return _select_option(_limit_option(command))


def suite_run_options(command: F) -> F:
    """Add what score and check share, in this order: --config, --suite, --select, --limit,
    --format, --quiet and --no-cache."""
    # applied innermost first, as a stack of decorators would be
    for add in (no_cache_option, quiet_option, format_option, selection_options, suite_option):
        command = add(command)
    return config_option(command)


def report_options(command: F) -> F:
    """Add --junit-xml PATH and --html PATH to a command that scores a suite."""
    return _junit_option(_html_option(command))


def check_report_paths(*paths: Path | None, what: str = "the report") -> None:
    """Refuse, before any judge call, an output path that could not be written later."""
    for path in paths:
        if path is None:
            continue
        if path.is_dir():
            raise ReportPathError(f"report path {path} is a directory; pass a file name")
        if path.exists() and not path.is_file():
            # Renaming a report over a device or FIFO would replace that node itself.
            raise ReportPathError(
                f"report path {path} is not a regular file (a device or FIFO); pass a file name"
            )
        existing = path.parent
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        problem = _unwritable(existing, creates_folders=existing != path.parent)
        if problem is not None:
            raise ReportPathError(
                f"cannot write {what} {path}: {existing} {problem}; pass a path in a "
                "directory you can write to"
            )


def _unwritable(folder: Path, *, creates_folders: bool) -> str | None:
    """Why a file (or, with ``creates_folders``, a folder) cannot be made in ``folder``.

    It tries: permission bits say nothing to root, and a folder such as /proc refuses new
    entries whatever its bits say. The probe is removed at once.
    """
    if not folder.is_dir():
        return "is not a directory"
    try:
        if creates_folders:
            os.rmdir(tempfile.mkdtemp(prefix=".canon-probe-", dir=folder))
        else:
            handle, probe = tempfile.mkstemp(prefix=".canon-probe-", dir=folder)
            os.close(handle)
            os.unlink(probe)
    except OSError as exc:
        return f"is not writable ({exc.strerror or type(exc).__name__})"
    return None


def write_reports(
    junit_path: Path | None,
    html_path: Path | None,
    *,
    results: Sequence[ArtifactResult],
    plan: ScoringPlan,
    suite: Path,
    comparison: Comparison | None = None,
    elapsed: float | None = None,
    artifacts: Sequence[Artifact] = (),
    inconclusive: Sequence[str] = (),
) -> None:
    """Write the requested JUnit XML and HTML reports, each atomically; the HTML page
    shows each artifact's text when ``artifacts`` are given. ``inconclusive``: why a scored
    run (no ``comparison``) could not tell (``scored_blind_notes``)."""
    texts = {a.key: a.text for a in artifacts}
    by_key = {a.key: a for a in artifacts}
    renderers = (
        (junit_path, functools.partial(junit_xml, artifacts=artifacts, inconclusive=inconclusive)),
        (
            html_path,
            functools.partial(
                html_report, texts=texts, artifacts=by_key, inconclusive=inconclusive
            ),
        ),
    )
    for path, render in renderers:
        if path is None:
            continue
        write_report(
            path, render(results, plan, suite=suite.stem, comparison=comparison, elapsed=elapsed)
        )


def write_report(path: Path, text: str) -> None:
    """Write one report file atomically; a failure is a ReportPathError naming it."""
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise ReportPathError(
            f"cannot write the report {path}: {exc.strerror or exc}; "
            "pass a path in a directory you can write to"
        ) from None


def load_run(
    config_path: Path | None,
    suite_path: Path | None,
    select: Sequence[str] = (),
    limit: int | None = None,
) -> tuple[Config, Path, tuple[Artifact, ...]]:
    """The config (with its .env files loaded), the suite's path and the artifacts to run:
    all of them, or those ``select`` names (keys or globs), at most ``limit``."""
    config = load_config(config_path)
    load_env_files(config.source.parent if config.source else config.base_dir)
    suite = suite_path or config.suite
    if suite is None:
        raise ConfigError("no suite to score: pass --suite FILE or set 'suite' in canon.yaml")
    roots = None if config.allow_outside_paths else config.project_roots
    artifacts = select_artifacts(read_suite(suite, roots=roots), select, limit, source=suite)
    return config, suite, artifacts


def score_with_progress(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    quiet: bool,
    baseline: Baseline | None = None,
    *,
    record: bool = False,
) -> Confirmation:
    """Score and confirm the artifacts, with progress lines on stderr unless quiet.

    ``record``: the run becomes a baseline (``canon accept``), so every answer is asked twice.
    """

    def progress(done: int, total: int, result: ArtifactResult) -> None:
        if not quiet:  # each artifact's settled verdict, as the report will give it
            click.echo(f"[{done}/{total}] {printable(result.key)} {verdict_word(result)}", err=True)

    confirmation = run_sync(
        score_run(plan, artifacts, baseline=baseline, on_result=progress, record=record)
    )
    judge = plan.judge
    if not quiet and confirmation.reasks:
        looked = sum(1 for asks in confirmation.asks.values() if asks > 1)
        click.echo(
            f"confirmation: {confirmation.reasks} re-ask(s) on {looked} cell(s)"
            + (" (every answer asked twice before it is recorded)" if record else ""),
            err=True,
        )
    if isinstance(judge, CachingJudge):
        _cache_notes(judge, quiet)
    return confirmation


def verdict_word(result: ArtifactResult) -> str:
    """An artifact's settled verdict in one word, as the reports give it."""
    if result.stopped_by is not None:
        return f"NON-CANON ({result.stopped_by} gate)"
    verdict = verdict_of(result)
    return "INCOMPLETE (not judged)" if verdict is Verdict.INCOMPLETE else verdict.label


def say_judge_unavailable(results: Sequence[ArtifactResult], command: str) -> None:
    """The one error line of a run the judge left unfinished (exit 3), naming the cause."""
    unscored = sum(len(r.unscored) for r in results)
    first = first_failure(results)
    cause = (
        f"{unscored} question(s) unscored (first: {first})"
        if first is not None
        else "re-asking the judge failed for a question a verdict hangs on"
    )
    click.echo(
        f"canon: error: the judge was unavailable: {cause}; "
        f'run "canon {command}" again when the judge is reachable',
        err=True,
    )


def emit_github(
    results: Sequence[ArtifactResult],
    suite: Path,
    comparison: Comparison | None = None,
    artifacts: Sequence[Artifact] = (),
    inconclusive: Sequence[str] = (),
) -> None:
    """Print GitHub Actions annotations; append a summary table to $GITHUB_STEP_SUMMARY
    (a file that cannot be appended to is a warning on stderr)."""
    from canon.report.github import github_annotations, github_summary

    annotations = github_annotations(
        results,
        comparison,
        suite_file=shown_path(suite),
        artifacts=artifacts,
        inconclusive=inconclusive,
    )
    click.echo(annotations, nl=False)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        try:
            with open(summary_file, "a", encoding="utf-8") as stream:
                stream.write(
                    github_summary(results, comparison, suite=suite.stem, inconclusive=inconclusive)
                )
        except OSError as exc:
            # A warning, not an error: exit codes must keep saying what the check found
            # (a 3 turned into a 2 would stop CI from retrying an unavailable judge).
            click.echo(
                f"canon: warning: cannot append to $GITHUB_STEP_SUMMARY ({summary_file}): "
                f"{exc.strerror or exc}; the annotations above are complete",
                err=True,
            )


def _cache_notes(judge: CachingJudge, quiet: bool) -> None:
    """Say what the answer cache did; damaged entries and a busy file are said even if quiet."""
    cache = judge.cache
    unsaved = cache.flush(wait=True)  # the run is scored: now wait for a busy file once more
    if not quiet and judge.hits:
        asked = judge.hits + judge.misses
        click.echo(
            f"judge cache: {judge.hits} of {asked} answer(s) reused from {cache.path} "
            "(--no-cache asks every question anew)",
            err=True,
        )
    if cache.discarded:
        click.echo(
            f"judge cache: note: discarded {cache.discarded} unreadable entr"
            f"{'y' if cache.discarded == 1 else 'ies'} in {cache.path} and asked the judge "
            "again; the fresh answers replace them",
            err=True,
        )
    if unsaved:
        click.echo(
            f"judge cache: note: {cache.path} is busy (another process holds its write lock); "
            f"{unsaved} answer(s) of this run were used but not saved, and will be asked "
            "again next run",
            err=True,
        )

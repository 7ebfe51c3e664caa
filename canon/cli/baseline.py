"""``canon accept`` records a run as the suite's baseline; ``canon check`` compares with it."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from canon.cli.common import config_option, reports_errors
from canon.cli.run import (
    build_plan,
    check_report_paths,
    format_option,
    load_run,
    no_cache_option,
    quiet_option,
    report_options,
    score_with_progress,
    suite_option,
    write_reports,
)
from canon.config import Config
from canon.core.artifact import Artifact
from canon.core.baseline import (
    Baseline,
    baseline_from_data,
    baseline_from_results,
    baseline_to_data,
    require_same_rubric,
)
from canon.core.compare import (
    REACCEPT,
    Comparison,
    Drift,
    Flip,
    confirm_flips,
    gate,
    provenance_notes,
)
from canon.core.scoring import ArtifactResult, Cell, score_cell, unscored_cell
from canon.errors import (
    BaselineError,
    ConfigError,
    JudgeError,
    JudgeScriptError,
    JudgeUnavailableError,
)
from canon.judge.base import JudgeRequest
from canon.judge.cache import fresh_judge
from canon.judge.concurrency import AdaptiveLimiter
from canon.judge.sync import run_sync
from canon.runner import DEFAULT_CONCURRENCY, ScoringPlan
from canon.store import dump_json, read_json, write_json_atomic


@click.command()
@config_option
@suite_option
@quiet_option
@no_cache_option
@report_options
@reports_errors
def accept(
    config_path: Path | None,
    suite_path: Path | None,
    quiet: bool,
    no_cache: bool,
    junit_path: Path | None,
    html_path: Path | None,
) -> None:
    """Score the suite and record the run as its baseline.

    Exit codes: 0 recorded, 2 bad input or config, 3 the judge was unavailable
    (nothing is written then).
    """
    check_report_paths(junit_path, html_path)
    config, suite, artifacts = load_run(config_path, suite_path)
    plan = build_plan(config, use_cache=not no_cache)
    started = time.monotonic()
    results = score_with_progress(config, plan, artifacts, quiet)
    elapsed = time.monotonic() - started
    # Written before the judge check below: a CI run needs the report most when it fails.
    write_reports(junit_path, html_path, results=results, plan=plan, suite=suite, elapsed=elapsed)
    unanswered = [(r.key, c) for r in results for c in r.unscored]
    if unanswered:
        key, cell = unanswered[0]
        raise JudgeUnavailableError(
            f"the judge left {len(unanswered)} question(s) unanswered (first: {key} "
            f'{cell.id}: {cell.error}); the baseline was not written; run "canon accept" '
            "again when the judge is reachable"
        )
    baseline = baseline_from_results(
        results,
        rubric=plan.rubric,
        judge=plan.judge.name,
        constitution=plan.constitution.digest,
        threshold=plan.threshold,
    )
    path = baseline_path(config, suite)
    document = baseline_to_data(baseline)
    unchanged = path.is_file() and path.read_text(encoding="utf-8") == dump_json(document)
    write_json_atomic(path, document)
    canon_count = sum(r.canon for r in results)
    click.echo(
        f"accepted suite '{suite.stem}': {len(results)} artifact(s) ({canon_count} canon, "
        f"{len(results) - canon_count} non-canon) -> {shown(path)}"
        + (" (unchanged)" if unchanged else "")
    )
    non_canon = [r.key for r in results if not r.canon]
    if non_canon:
        click.echo(
            f"warning: recorded {len(non_canon)} non-canon artifact(s) ({', '.join(non_canon)}); "
            '"canon check" fails until they cohere'
        )


@click.command()
@config_option
@suite_option
@format_option
@quiet_option
@no_cache_option
@report_options
@reports_errors
def check(
    config_path: Path | None,
    suite_path: Path | None,
    output_format: str,
    quiet: bool,
    no_cache: bool,
    junit_path: Path | None,
    html_path: Path | None,
) -> None:
    """Score the suite and compare it with its baseline.

    Exit codes: 0 conforms, 1 a regression or non-canon artifact, 2 bad input, config or
    baseline, 3 the judge was unavailable.
    """
    check_report_paths(junit_path, html_path)
    config, suite, artifacts = load_run(config_path, suite_path)
    plan = build_plan(config, use_cache=not no_cache)
    path = baseline_path(config, suite)
    baseline = read_baseline(path, suite_name=suite.stem)
    require_same_rubric(baseline, plan.rubric, source=shown(path))
    started = time.monotonic()
    results = score_with_progress(config, plan, artifacts, quiet)
    comparison = run_sync(
        compare_run(plan, artifacts, results, baseline, config.tolerance, config.concurrency)
    )
    elapsed = time.monotonic() - started
    extra = provenance_notes(baseline, judge=plan.judge.name, constitution=plan.constitution.digest)
    if extra:
        comparison = dataclasses.replace(comparison, notes=(*extra, *comparison.notes))
    if output_format == "json":
        document = check_document(comparison, baseline, suite=suite.stem, path=shown(path))
        sys.stdout.write(dump_json(document))
    else:
        report = render_check(comparison, baseline, suite=suite.stem, path=shown(path))
        click.echo(report, nl=False)
    write_reports(
        junit_path,
        html_path,
        results=results,
        plan=plan,
        suite=suite,
        comparison=comparison,
        elapsed=elapsed,
    )
    sys.exit(exit_code_for(comparison))


def baseline_path(config: Config, suite: Path) -> Path:
    """Where a suite's baseline lives: ``<baselines_dir>/<suite file stem>.json``."""
    if config.baselines_dir is None:
        raise ConfigError(f"{config.source or 'canon.yaml'}: set 'baselines_dir'")
    return config.baselines_dir / f"{suite.stem}.json"


def read_baseline(path: Path, *, suite_name: str) -> Baseline:
    """Read and validate a suite's baseline file."""
    if not path.exists():
        raise BaselineError(
            f"no baseline for suite '{suite_name}' at {shown(path)}; run \"canon accept\""
        )
    data = read_json(path, "baseline", BaselineError)
    return baseline_from_data(data, source=shown(path))


def shown(path: Path) -> str:
    """A path as the user would type it: relative to here when it is below here."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


async def compare_run(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    results: Sequence[ArtifactResult],
    baseline: Baseline,
    tolerance: float,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> Comparison:
    """Compare a scored run with its baseline, re-asking the judge about every flip."""
    comparison = gate(results, baseline, plan.threshold, tolerance)
    pending = [f for f in comparison.flips if f.status == "pending"]
    if not pending:
        return comparison
    by_key = {a.key: a for a in artifacts}
    reasked = await reask_flips(plan, by_key, pending, concurrency)
    return confirm_flips(comparison, reasked)


async def reask_flips(
    plan: ScoringPlan,
    artifacts: Mapping[str, Artifact],
    flips: Sequence[Flip],
    concurrency: int = DEFAULT_CONCURRENCY,
) -> dict[tuple[str, str], Cell]:
    """Ask the judge each flipped question once more; a failed call is an unscored cell."""
    questions = {q.id: q for q in plan.questions}
    limiter = AdaptiveLimiter(concurrency)  # shrinks and trips like the scoring run's
    judge = fresh_judge(plan.judge)  # a cached answer would only repeat the flip

    async def ask(flip: Flip) -> tuple[tuple[str, str], Cell]:
        question = questions[flip.question]
        request = JudgeRequest(
            question, artifacts[flip.key], plan.constitution, plan.rubric.instructions
        )
        async with limiter:
            try:
                cell = score_cell(question, await judge.answer(request))
            except JudgeScriptError:
                raise  # a mis-scripted test must fail loudly
            except JudgeError as exc:
                cell = unscored_cell(question, str(exc))
        return (flip.key, flip.question), cell

    answers: list[Any] = await asyncio.gather(*(ask(f) for f in flips))
    return dict(answers)


def exit_code_for(comparison: Comparison) -> int:
    """0 conforms, 1 regressed or non-canon, 3 the judge left questions unanswered."""
    return {"conforms": 0, "regressed": 1, "unavailable": 3}[comparison.status]


def remedy(comparison: Comparison, baseline: Baseline) -> str:
    """The last line of a check report: the verdict and what to do next."""
    if comparison.status == "regressed":
        return f"REGRESSION: fix what regressed; if the change is intended, {REACCEPT}"
    if comparison.status == "unavailable":
        return (
            f"INCOMPLETE: the judge left {comparison.unscored} question(s) unanswered and no "
            'regression was found; run "canon check" again when the judge is reachable'
        )
    stale = comparison.new or comparison.missing or baseline.legacy
    if stale or any(REACCEPT in note for note in comparison.notes):
        return f"CONFORMS to the baseline; to fold the notes above into it, {REACCEPT}"
    return "CONFORMS to the baseline"


def render_check(comparison: Comparison, baseline: Baseline, *, suite: str, path: str) -> str:
    """The human-readable check report; it ends with the remedy."""
    c = comparison
    lines = [
        f"canon check: suite '{suite}' against {path}",
        f"  {c.checked} artifact(s) checked: {c.matched} matched, {len(c.new)} new, "
        f"{len(c.missing)} recorded but missing",
    ]
    if c.non_canon:
        lines.append("non-canon artifacts:")
        lines.extend(f"  {n.key}: {'; '.join(n.reasons)}" for n in c.non_canon)
    if c.flips:
        lines.append("per-question flips from solidly satisfied to solidly violated (Layer 1):")
        for f in c.flips:
            verdict = {
                "pending": "REGRESSION (not re-asked)",
                "confirmed": "REGRESSION (confirmed on re-ask)",
                "unconfirmed": "not repeated on re-ask",
                "unavailable": "re-ask failed",
            }[f.status]
            lines.append(
                f"  {f.key} {f.question}: {f.baseline_score:.2f} (confidence "
                f"{f.baseline_confidence:.2f}) -> {f.score:.2f} (confidence {f.confidence:.2f}) "
                f"- {verdict}: {f.text}"
            )
    lines.extend(_drift_lines(c.drift))
    if c.notes:
        lines.append("notes:")
        lines.extend(f"  - {note}" for note in c.notes)
    lines.append(remedy(c, baseline))
    return "\n".join(lines) + "\n"


def _drift_lines(drift: Drift) -> list[str]:
    test = drift.test
    if drift.drop is None or drift.baseline_mean is None or drift.current_mean is None:
        return ["mean drift (Layer 2): nothing to compare"]
    head = (
        f"mean drift (Layer 2): {drift.baseline_mean:.3f} -> {drift.current_mean:.3f} "
        f"(drop {drift.drop:.3f}, tolerance {drift.tolerance:.3f})"
    )
    if test.method == "none":
        return [f"{head}: not tested ({test.detail})"]
    if drift.regressed:
        verdict = "REGRESSION: beyond the tolerance and beyond noise"
    elif drift.drop > drift.tolerance:
        verdict = "beyond the tolerance but within noise"
    else:
        verdict = "within the tolerance"
    p_value = "" if test.p_value is None else f", one-sided p = {test.p_value:.3g}"
    return [
        f"{head}: {verdict}",
        f"  {test.detail}{p_value}; the smallest drop this check could flag here is "
        f"{drift.smallest_flaggable:.3f} (the test alone: {test.minimum_detectable:.3f})",
    ]


def check_document(
    comparison: Comparison, baseline: Baseline, *, suite: str, path: str
) -> dict[str, Any]:
    """The check report as plain data, for ``--format json``."""
    c, drift = comparison, comparison.drift
    return {
        "suite": suite,
        "baseline": path,
        "status": c.status,
        "exit_code": exit_code_for(c),
        "artifacts": {
            "checked": c.checked,
            "matched": c.matched,
            "new": list(c.new),
            "missing": list(c.missing),
        },
        "non_canon": [{"key": n.key, "reasons": list(n.reasons)} for n in c.non_canon],
        "flips": [dataclasses.asdict(f) for f in c.flips],
        "drift": {
            "baseline_mean": drift.baseline_mean,
            "current_mean": drift.current_mean,
            "drop": drift.drop,
            "tolerance": drift.tolerance,
            "test": drift.test.method,
            "n": drift.test.n,
            "p_value": drift.test.p_value,
            "minimum_detectable_drop": drift.test.minimum_detectable,
            "smallest_flaggable_drop": drift.smallest_flaggable,
            "regressed": drift.regressed,
        },
        "notes": list(c.notes),
        "unscored_questions": c.unscored,
        "remedy": remedy(c, baseline),
    }

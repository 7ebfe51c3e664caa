"""``canon contract``: check OpenTelemetry traces against behavioral contracts."""

from __future__ import annotations

import glob
import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from canon.cli.common import (
    HELP_OPTIONS,
    docs_epilog,
    output_directory,
    output_file,
    reports_errors,
)
from canon.cli.online import JudgeChoice, judge_options
from canon.errors import CanonError, ExitCode, GateError, UsageError
from canon.gates.contracts.audit import AuditRecord, create_audit_record
from canon.gates.contracts.dump import dump_contract
from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.generate import generate_contract
from canon.gates.contracts.loader import merge_source_maps
from canon.gates.contracts.model import Contract, Verdict
from canon.gates.contracts.templates import TEMPLATE_NAMES, list_templates, template_text
from canon.gates.contracts.validate import validate
from canon.monitor.directory import monitor_directory
from canon.monitor.stats import MonitorStats
from canon.project.contract_files import (
    load_contract_file,
    read_source_map,
    read_trace_runs,
    run_stem,
    write_audit_record,
)
from canon.project.store import dump_json, write_text_atomic

_TRACE_SUFFIXES = (".json", ".jsonl")
_MERGED_MAP_HELP = "JSON/YAML tool → source map, added to the contract's own (wins a clash)."


def parse_metadata(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``k=v`` pairs; a value that parses as a JSON scalar (85, true, null) takes that type."""
    metadata: dict[str, Any] = {}
    for pair in pairs:
        key, separator, text = pair.partition("=")
        if not separator or not key:
            raise UsageError(f"--metadata {pair!r}: expected key=value, e.g. risk_score=85")
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        metadata[key] = value if value is None or isinstance(value, str | int | float) else text
    return metadata


def _same_file(left: Path, right: Path) -> bool:
    """True when both paths name one file (through symlinks or relative paths alike)."""
    try:
        return os.path.samefile(left, right)
    except OSError:  # the output does not exist yet
        return os.path.realpath(left) == os.path.realpath(right)


def expand_traces(patterns: tuple[str, ...]) -> list[Path]:
    """Files named by paths, directories (their trace files) or globs, in file-name order."""
    found: set[Path] = set()
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            found.update(p for p in path.iterdir() if p.suffix in _TRACE_SUFFIXES and p.is_file())
        elif path.is_file():
            found.add(path)
        else:
            found.update(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
    if not found:
        raise UsageError(f"no trace files match {' '.join(patterns)}; check the --traces pattern")
    return sorted(found, key=str)


def _source_map(path: Path | None) -> dict[str, DataSource] | None:
    return None if path is None else read_source_map(path)


def _merged_source_map(loaded: Contract, path: Path | None) -> dict[str, DataSource]:
    """The contract's own source map with ``--source-map`` laid over it; notes each clash."""
    given = _source_map(path)
    if given is None:
        return dict(loaded.source_map)
    merged, clashes = merge_source_maps(loaded.source_map, given)
    for tool in clashes:
        own, mine = loaded.source_map[tool], given[tool]
        click.echo(
            f"canon: note: --source-map {path} maps tool {tool!r} to {mine.name!r} "
            f"({mine.type}); {loaded.name} maps it to {own.name!r} ({own.type}); "
            "--source-map wins",
            err=True,
        )
    return merged


@click.group(context_settings=HELP_OPTIONS, epilog=docs_epilog("contracts", "gates"))
def contract() -> None:
    """Check OpenTelemetry traces against behavioral contracts."""


def _violation_lines(verdict: Verdict) -> list[str]:
    return [f"      #{v.index} [{v.severity}] {v.name}: {v.message}" for v in verdict.violations]


@contract.command("run")
@click.option("--contract", "contract_ref", required=True, help="Contract file or template name.")
@click.option("--traces", "patterns", required=True, multiple=True, help="Trace file, dir or glob.")
@click.option("--source-map", type=click.Path(path_type=Path), help=_MERGED_MAP_HELP)
@click.option("--metadata", "pairs", multiple=True, help="key=value added to every execution.")
@click.option("--fail-on-violation", is_flag=True, help="Exit 1 when any trace FAILs.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option(
    "--audit-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also write one audit record per run into this directory.",
)
@reports_errors
def run(
    contract_ref: str,
    patterns: tuple[str, ...],
    source_map: Path | None,
    pairs: tuple[str, ...],
    fail_on_violation: bool,
    as_json: bool,
    audit_dir: Path | None,
) -> None:
    """Validate every run in the matching files; a file that is not a trace is reported.

    A file or session export holding several runs (trace ids) gets one verdict per run.
    """
    loaded = load_contract_file(contract_ref)
    mapping = _merged_source_map(loaded, source_map)
    metadata = parse_metadata(pairs)
    records: list[dict[str, Any]] = []
    lines: list[str] = []
    counts = {"pass": 0, "fail": 0, "warn": 0, "error": 0}
    for path in expand_traces(patterns):
        try:
            executions = read_trace_runs(path, metadata=metadata)
        except CanonError as exc:
            counts["error"] += 1
            records.append(
                {
                    "trace": str(path),
                    "verdict": {"status": "error", "violations": []},
                    "error": str(exc),
                }
            )
            lines.append(f"ERROR {path}: {exc}")
            continue
        for execution in executions:
            verdict = validate(loaded, execution, source_map=mapping)
            counts[verdict.status] += 1
            if audit_dir is not None:
                record = create_audit_record(
                    verdict, execution, source_map=mapping, trace=str(path)
                )
                stem = (
                    path.stem
                    if len(executions) == 1
                    else run_stem(path.stem, execution.execution_id)
                )
                write_audit_record(record, audit_dir, stem)
            records.append(
                {
                    "trace": str(path),
                    "trace_id": execution.execution_id,
                    "verdict": verdict.to_dict(),
                }
            )
            shown = f"{path} [{execution.execution_id}]" if len(executions) > 1 else str(path)
            lines.append(f"{verdict.status.upper():<5} {shown}")
            lines.extend(_violation_lines(verdict))
    summary = {
        "contract": loaded.name,
        "contract_version": loaded.version,
        "total": len(records),
        "passed": counts["pass"],
        "failed": counts["fail"],
        "warned": counts["warn"],
        "errors": counts["error"],
    }
    if as_json:
        click.echo(dump_json({"records": records, "summary": summary}), nl=False)
    else:
        lines.append(
            f"{len(records)} run(s) against {loaded.name} v{loaded.version}: "
            f"{counts['pass']} passed, {counts['fail']} failed, {counts['warn']} warned, "
            f"{counts['error']} unreadable"
        )
        click.echo("\n".join(lines))
    if counts["error"]:
        sys.exit(ExitCode.USAGE_ERROR)
    if fail_on_violation and counts["fail"]:
        sys.exit(ExitCode.FAILED)


@contract.command("generate")
@click.option("--traces", "pattern", required=True, help="The golden trace (one file).")
@click.option("--name", default="auto-generated-v1", show_default=True, help="Contract name.")
@click.option("--version", "version", default="1.0.0", show_default=True, help="Contract version.")
@click.option("--source-map", type=click.Path(path_type=Path), help="JSON/YAML tool → source map.")
@click.option("--output", "output_text", metavar="FILE", help="Write the YAML here (else stdout).")
@click.option("--trace-id", help="The run to use when the file holds several (trace id).")
@reports_errors
def generate(
    pattern: str,
    name: str,
    version: str,
    source_map: Path | None,
    output_text: str | None,
    trace_id: str | None,
) -> None:
    """Write a contract describing what the golden trace did (review it before relying on it).

    From a file holding several runs, --trace-id picks the golden one.
    """
    output = output_file(output_text)
    paths = expand_traces((pattern,))
    if len(paths) != 1:
        raise UsageError(
            f"--traces matches {len(paths)} files; generate from exactly one golden trace"
        )
    for given, what in ((paths[0], "golden trace"), (source_map, "source map")):
        if output is not None and given is not None and _same_file(output, given):
            raise UsageError(
                f"--output {output} is the {what} {given}, which would be overwritten; "
                "choose another path"
            )
    execution = _golden_run(paths[0], trace_id)
    generated = generate_contract(
        execution, name=name, version=version, source_map=_source_map(source_map)
    )
    # The promise of `generate` is that its golden trace passes; check it rather than hope.
    verdict = validate(generated, execution)
    if verdict.status != "pass":
        raise GateError(
            f"generated contract fails its own golden trace {paths[0]}: "
            f"{'; '.join(v.name for v in verdict.violations)}; please report this as a bug"
        )
    text = f"# Generated from {paths[0].name}; review before use.\n" + dump_contract(generated)
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            write_text_atomic(output, text)
        except OSError as exc:
            raise UsageError(
                f"--output {output}: cannot write the contract ({exc.strerror or exc}); "
                "choose a writable file path"
            ) from None
        click.echo(f"wrote {output} ({len(generated.constraints)} constraints)", err=True)


def _golden_run(path: Path, trace_id: str | None) -> Execution:
    """The one run of ``path`` to generate from: the only one, or the one ``trace_id`` names."""
    runs = read_trace_runs(path)
    ids = [run.execution_id for run in runs]
    if trace_id is not None:
        wanted = trace_id.strip().lower()
        for run in runs:
            if run.execution_id == wanted:
                return run
        raise UsageError(
            f"--trace-id {trace_id}: {path} holds no such run; its runs: {', '.join(ids)}"
        )
    if len(runs) > 1:
        raise UsageError(
            f"{path} holds {len(runs)} runs; choose the golden one with --trace-id "
            f"(one of {', '.join(ids)})"
        )
    return runs[0]


@contract.command("templates")
@click.option("--show", "show", type=click.Choice(TEMPLATE_NAMES), help="Print one template.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@reports_errors
def templates(show: str | None, as_json: bool) -> None:
    """List the bundled domain contracts (usable as --contract NAME)."""
    if show is not None:
        click.echo(template_text(show), nl=False)
        return
    bundled: list[Contract] = list(list_templates())
    if as_json:
        rows = [
            {
                "name": item.name,
                "version": item.version,
                "constraints": len(item.constraints),
                "description": item.description,
            }
            for item in bundled
        ]
        click.echo(dump_json(rows), nl=False)
        return
    width = max(len(item.name) for item in bundled)
    for item in bundled:
        click.echo(
            f"{item.name:<{width}}  v{item.version}  {len(item.constraints)} constraints  "
            f"{item.description}"
        )


@contract.command("list-contracts", hidden=True)
@click.pass_context
def list_contracts(ctx: click.Context) -> None:
    """The reference package's name for 'canon contract templates'."""
    click.echo("canon contract: 'list-contracts' is 'templates' in Canon", err=True)
    ctx.invoke(templates, show=None, as_json=False)


def _print_stats(stats: MonitorStats) -> None:
    rate = "n/a" if stats.compliance_rate is None else f"{stats.compliance_rate:.1%}"
    click.echo(
        f"validated {stats.validated} trace(s) in {stats.polls} poll(s): {stats.passed} passed, "
        f"{stats.failed} failed, {stats.warned} warned, {stats.errors} unreadable, "
        f"{stats.pending} pending; compliance {rate}"
        + (f"; {stats.late} late span(s) recorded, not judged" if stats.late else "")
    )


def _alert_name(record: AuditRecord) -> str:
    """The trace an alert names, with its trace id when the name does not say it already."""
    trace = str(record.trace)
    trace_id = record.execution_summary.get("execution_id")
    if not isinstance(trace_id, str) or not trace_id or trace_id in trace:
        return trace  # a CloudWatch trace is named by its id
    return f"{trace} [{trace_id}]"


@contract.command("monitor")
@click.argument(
    "watch_dir", required=False, type=click.Path(path_type=Path, file_okay=False, exists=True)
)
@click.option("--contract", "contract_ref", required=True, help="Contract file or template name.")
@click.option(
    "--output-dir", "output_dir_text", metavar="DIR", required=True, help="Audit records."
)
@click.option(
    "--cloudwatch-log-group",
    "log_group",
    help="Poll this CloudWatch Logs group of spans (e.g. aws/spans) instead of WATCH_DIR.",
)
@click.option("--region", help="AWS region of the log group [default: AWS_REGION, else boto3's].")
@click.option("--source-map", type=click.Path(path_type=Path), help=_MERGED_MAP_HELP)
@click.option("--metadata", "pairs", multiple=True, help="key=value added to every execution.")
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="Seconds between polls.",
)
@click.option(
    "--settle",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds a file (or a trace's spans) must stay unchanged before it is validated "
    "[default: 2 for WATCH_DIR, 30 for CloudWatch].",
)
@click.option(
    "--look-back",
    type=click.FloatRange(min=0),
    default=None,
    help="CloudWatch: seconds each read reaches back for late or early-stamped spans "
    "[default: 600].",
)
@click.option("--max-polls", type=click.IntRange(min=1), default=None, help="Stop after N polls.")
@judge_options
@reports_errors
def monitor(
    watch_dir: Path | None,
    contract_ref: str,
    output_dir_text: str,
    log_group: str | None,
    region: str | None,
    source_map: Path | None,
    pairs: tuple[str, ...],
    poll_interval: float,
    settle: float | None,
    look_back: float | None,
    max_polls: int | None,
    judging: JudgeChoice,
) -> None:
    """Validate traces in WATCH_DIR (or a CloudWatch log group) as they come; Ctrl-C stops.

    A file holding several runs (trace ids) gets one verdict and one record per run. Each
    run is validated once, also across restarts and a kill -9: the audit records in
    OUTPUT_DIR carry their trace's key and are the monitor's memory; each FAIL/WARN is
    printed and journaled once in OUTPUT_DIR/.canon-monitor-alerts.jsonl. A file is read
    once unchanged for --settle seconds. With --cloudwatch-log-group, spans are grouped
    into traces and a trace is validated once no span came for it for --settle seconds;
    reads reach back by --look-back seconds; where to resume is kept in
    OUTPUT_DIR/.canon-cloudwatch-state.json. Needs boto3: pip install
    "canon-testing[cloudwatch]".

    With --judge, each trace the contract did not fail is also judged, if --sample picks it
    and --budget allows, its request and answer becoming the artifact's input and text;
    the decision goes into its record, and --otel sends each verdict as events parented
    to the trace. `canon monitor report OUTPUT_DIR` summarizes the decisions.
    """
    if (watch_dir is None) == (log_group is None):
        raise UsageError(
            "canon contract monitor: give either WATCH_DIR or --cloudwatch-log-group NAME"
        )
    if region is not None and log_group is None:
        raise UsageError("canon contract monitor: --region goes with --cloudwatch-log-group")
    if look_back is not None and log_group is None:
        raise UsageError("canon contract monitor: --look-back goes with --cloudwatch-log-group")
    output_dir = output_directory(output_dir_text)
    loaded = load_contract_file(contract_ref)
    online, on_judged = judging.build()

    def announce(record: AuditRecord) -> None:
        verdict = record.verdict
        # one write: the alert's mark follows it at once (see canon.monitor.ledger)
        click.echo(
            "\n".join(
                [f"{verdict.status.upper():<5} {_alert_name(record)}", *_violation_lines(verdict)]
            )
        )

    def unreadable(path: Path, problem: str) -> None:
        click.echo(f"canon contract monitor: {problem} (counted as unreadable)", err=True)

    place = f"cloudwatch:{log_group}" if log_group is not None else str(watch_dir)

    def started(done: int) -> None:
        click.echo(
            f"canon contract monitor: watching {place}; {done} trace(s) already have "
            f"records in {output_dir}",
            err=True,
        )

    options: dict[str, Any] = {
        "output_dir": output_dir,
        "poll_interval": poll_interval,
        "metadata": parse_metadata(pairs) or None,
        "source_map": _merged_source_map(loaded, source_map),
        "on_violation": announce,
        "on_start": started,
        "max_polls": max_polls,
        "judge": online,
        "on_judged": on_judged,
    }
    if settle is not None:
        options["settle"] = settle
    if log_group is not None:
        from canon.monitor.cloudwatch import monitor_cloudwatch

        if look_back is not None:
            options["look_back"] = look_back
        stats = monitor_cloudwatch(loaded, log_group, region=region, **options)
    else:
        assert watch_dir is not None
        stats = monitor_directory(loaded, watch_dir, on_unreadable=unreadable, **options)
    _print_stats(stats)

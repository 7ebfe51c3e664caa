"""``canon monitor``: live traces through Redis Streams (ingest, worker) and the report."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import click

from canon.cli.common import HELP_OPTIONS, docs_epilog, output_file, reports_errors
from canon.cli.online import JudgeChoice, judge_options
from canon.core.online import DEFAULT_SETTLE, DEFAULT_SETTLE_MAX, summarize, trend
from canon.errors import UsageError
from canon.monitor.streams import (
    DEFAULT_CLAIM_IDLE,
    DEFAULT_LEASE,
    DEFAULT_PREFIX,
    DEFAULT_RETENTION,
    DEFAULT_STREAMS,
    Keys,
)
from canon.project.store import dump_json, write_text_atomic

DEFAULT_REDIS = "redis://127.0.0.1:6379/0"

_redis_option = click.option(
    "--redis",
    "redis_url",
    default=DEFAULT_REDIS,
    show_default=True,
    envvar="CANON_REDIS_URL",
    help="The Redis server (redis://host:port/db; or CANON_REDIS_URL).",
)
_prefix_option = click.option(
    "--prefix",
    default=DEFAULT_PREFIX,
    show_default=True,
    help="Prefix of every Redis key of this deployment (one Redis, several deployments).",
)
_streams_option = click.option(
    "--streams",
    type=click.IntRange(min=1),
    default=DEFAULT_STREAMS,
    show_default=True,
    help="Number of streams; a trace's spans go to one, by a hash of its trace id. Give "
    "ingest and workers the same number.",
)


@click.group(context_settings=HELP_OPTIONS, epilog=docs_epilog("online"))
def monitor() -> None:
    """Judge live traces at scale: OTLP ingest into Redis Streams, a consumer group of
    workers, and the report of their decisions."""


def _stop_on_sigterm() -> None:
    """SIGTERM stops a command as Ctrl-C does (what a process manager sends)."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


@monitor.command("ingest")
@_redis_option
@_prefix_option
@_streams_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=4318, show_default=True)
@reports_errors
def ingest(redis_url: str, prefix: str, streams: int, host: str, port: int) -> None:
    """Receive OTLP/HTTP traces (protobuf or JSON, POST /v1/traces) from an OpenTelemetry
    Collector and append each trace's spans to its Redis stream. Ctrl-C or SIGTERM stops."""
    from canon.monitor.ingest import TRACES_PATH, make_server
    from canon.monitor.streams import connect

    client = connect(redis_url)
    try:
        server = make_server(client, Keys(prefix), streams, host, port)
    except OSError as exc:
        raise UsageError(f"--host {host} --port {port}: cannot listen ({exc})") from None
    bound = server.server_address[1]
    click.echo(
        f"canon monitor ingest: listening on http://{host}:{bound}{TRACES_PATH}; "
        f"{streams} stream(s) at {redis_url}",
        err=True,
    )
    _stop_on_sigterm()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@monitor.command("worker")
@_redis_option
@_prefix_option
@_streams_option
@click.option("--contract", "contract_ref", help="Contract file or template name to run first.")
@click.option(
    "--settle",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds without a new span, after the root span ended, before a trace is complete "
    f"[default: monitor.settle in canon.yaml, else {DEFAULT_SETTLE:g}].",
)
@click.option(
    "--settle-max",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds after its first span when a trace is complete anyway (a lost root) "
    f"[default: monitor.settle_max in canon.yaml, else {DEFAULT_SETTLE_MAX:g}].",
)
@click.option(
    "--claim-idle",
    type=click.FloatRange(min=0.001),
    default=DEFAULT_CLAIM_IDLE,
    show_default=True,
    help="Seconds an entry stays with a silent worker before another claims it (XAUTOCLAIM).",
)
@click.option(
    "--lease",
    type=click.FloatRange(min=0.001),
    default=DEFAULT_LEASE,
    show_default=True,
    help="Seconds a worker holds a trace it decides; a dead worker's traces return after it.",
)
@click.option(
    "--retention",
    type=click.FloatRange(min=1),
    default=DEFAULT_RETENTION,
    show_default=True,
    help="Seconds a decision is kept: its record in the records stream, and its once key "
    "(a trace delivered again within it is never recorded twice).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Traces judged at once by this worker.",
)
@click.option("--name", help="This worker's consumer name [default: host-pid].")
@click.option(
    "--exit-when-idle",
    type=click.FloatRange(min=0),
    default=None,
    help="Stop once nothing arrived and no trace waited for this many seconds.",
)
@judge_options
@reports_errors
def worker(
    redis_url: str,
    prefix: str,
    streams: int,
    contract_ref: str | None,
    settle: float | None,
    settle_max: float | None,
    claim_idle: float,
    lease: float,
    retention: float,
    concurrency: int,
    name: str | None,
    exit_when_idle: float | None,
    judging: JudgeChoice,
) -> None:
    """Work in the consumer group: assemble traces from the streams, wait for each to
    settle, run the contract, judge a sample within the budget (--judge), and record one
    decision per trace in Redis, effectively once across crashes of any worker.

    Run as many as you like, on any machine, with the same --redis, --prefix and --streams.
    `canon monitor report` summarizes the records.
    """
    from canon.monitor.streams import RedisBudget, Worker, connect, run_worker
    from canon.project.contract_files import load_contract_file

    client = connect(redis_url)
    keys = Keys(prefix)
    contract = None if contract_ref is None else load_contract_file(contract_ref)
    online, on_judged = judging.build(lambda limit: RedisBudget(client, keys, limit))
    configured = judging.settings()
    if settle is None:
        settle = DEFAULT_SETTLE if configured.settle is None else configured.settle
    if settle_max is None:
        settle_max = DEFAULT_SETTLE_MAX if configured.settle_max is None else configured.settle_max
    options: dict[str, Any] = {} if name is None else {"name": name}
    member = Worker(
        client,
        keys,
        streams,
        contract=contract,
        judge=online,
        on_judged=on_judged,
        settle=settle,
        settle_max=settle_max,
        claim_idle=claim_idle,
        lease=lease,
        retention=retention,
        concurrency=concurrency,
        **options,
    )
    click.echo(
        f"canon monitor worker {member.name}: {streams} stream(s) at {redis_url}"
        + ("" if online is None else f", judging {online.rate:g} of the traces"),
        err=True,
    )
    _stop_on_sigterm()
    seen, since = -1, time.monotonic()

    def idle() -> bool:
        nonlocal seen, since
        if exit_when_idle is None:
            return False
        now = time.monotonic()
        if member.stats.entries != seen or client.zcard(keys.pending) > 0:
            seen, since = member.stats.entries, now
            return False
        return now - since >= exit_when_idle

    stats = run_worker(member, stop=idle)
    click.echo(
        f"canon monitor worker {member.name}: filed {stats.entries} entr(ies) "
        f"({stats.claimed} claimed from silent workers), decided {stats.decided} trace(s), "
        f"{stats.recorded} new record(s)",
        err=True,
    )


@monitor.command("report")
@click.option(
    "--records",
    "records_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="A directory monitor's --output-dir (else the Redis deployment's records).",
)
@_redis_option
@_prefix_option
@click.option(
    "--period",
    type=click.FloatRange(min=1),
    default=3600.0,
    show_default=True,
    help="Seconds per point of the trend.",
)
@click.option("--html", "html_text", metavar="FILE", help="Write the trend page here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@reports_errors
def report(
    records_dir: Path | None,
    redis_url: str,
    prefix: str,
    period: float,
    html_text: str | None,
    as_json: bool,
) -> None:
    """Summarize the decisions: counts by kind, the sampled canon rate and each principle's
    rate with 95% Wilson intervals; --html writes a page with a trend plot per principle."""
    from canon.monitor.records import decisions_of, directory_records
    from canon.report.online import summary_data, summary_lines, trend_page

    html_path = output_file(html_text, "--html")
    if records_dir is not None:
        decisions = decisions_of(directory_records(records_dir))
        source = str(records_dir)
    else:
        from canon.monitor.streams import connect, read_records

        client = connect(redis_url)
        keys = Keys(prefix)
        found = read_records(client, keys)
        decisions = decisions_of((f"redis {keys.records}", record) for record in found)
        source = f"{redis_url} ({keys.records})"
    summary = summarize(decisions)
    if as_json:
        sys.stdout.write(dump_json(summary_data(summary)))
    else:
        click.echo("\n".join(summary_lines(summary)))
    if html_path is not None:
        page = trend_page(summary, trend(decisions, period), source=source, period=period)
        try:
            write_text_atomic(html_path, page)
        except OSError as exc:
            raise UsageError(f"--html {html_path}: cannot write ({exc.strerror or exc})") from None
        click.echo(f"wrote {html_path}", err=True)

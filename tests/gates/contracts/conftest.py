"""Shared pieces for the contract-gate tests: executions by hand, an AWS emulator, a kill kit."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from canon.gates.contracts import DataSource, Execution, Step

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "traces"
DOCS = Path(__file__).resolve().parents[3] / "docs"


@pytest.fixture
def doc_example(tmp_path: Path) -> Callable[[str], ModuleType]:
    """Import the first Python block under ``## {section}`` of docs/development.md."""
    return lambda section: _doc_example(section, tmp_path)


def _doc_example(section: str, tmp_path: Path) -> ModuleType:
    text = (DOCS / "development.md").read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    source = re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL)[0]
    path = tmp_path / "doc_example.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"doc_example_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up while it is built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _step(spec: str | Step | tuple[str, str]) -> Step:
    if isinstance(spec, Step):
        return spec
    if isinstance(spec, tuple):
        name, kind = spec
        return Step(name=name, kind=kind, status="ok")  # type: ignore[arg-type]
    return Step(name=spec, kind="tool_call", status="ok")


@pytest.fixture
def make_execution() -> Callable[..., Execution]:
    """Build an execution: bare strings are successful tool calls, in the order given."""

    def build(
        *steps: str | Step | tuple[str, str],
        output: str | None = "Approved per Section 4.2.1.",
        request: str | None = "Process pharmacy claim for member MEM-1",
        metadata: dict[str, Any] | None = None,
        execution_id: str = "exec-1",
    ) -> Execution:
        return Execution(
            execution_id=execution_id,
            steps=tuple(_step(spec) for spec in steps),
            input_text=request,
            output_text=output,
            metadata=metadata or {},
        )

    return build


@pytest.fixture
def kb_step() -> Callable[[str, str], Step]:
    """A retrieval step that names the knowledge base it read."""

    def build(name: str, kb: str) -> Step:
        return Step(
            name=name, kind="retrieval", status="ok", sources=(DataSource(kb, "knowledge_base"),)
        )

    return build


@pytest.fixture
def corpus_dir() -> Path:
    """The real-trace corpus shipped with the tests."""
    return CORPUS


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def aws_env() -> Iterator[dict[str, str]]:
    """A moto server on 127.0.0.1 and the environment that points boto3 at it."""
    pytest.importorskip("moto")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("moto server did not start")
            time.sleep(0.1)
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    yield env
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture
def logs(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """A logs client on the emulator (tests make their own log groups)."""
    boto3 = pytest.importorskip("boto3")
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    return boto3.client("logs", region_name="us-east-1")


@dataclass
class Child:
    """A process the test started: killed with SIGKILL or stopped with SIGINT."""

    pid: int
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    code: int | None = None  # once reaped

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        if self.code is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.code = os.waitstatus_to_exitcode(status)
        return self.code is None

    def kill(self) -> None:
        """kill -9, then reap it."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
        self.wait(10)

    def stop(self, timeout: float = 60) -> int:
        """Ctrl-C, and its exit code (a loaded CI machine with moto can take a while to answer)."""
        os.kill(self.pid, signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout: float) -> int:
        if self.popen is not None:
            return self.popen.wait(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                assert self.code is not None
                return self.code
            time.sleep(0.01)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError(f"process {self.pid} did not end within {timeout} s")

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8") if self.log.exists() else ""


def fork_call(work: Callable[[], object], log: Path) -> Child:
    """Run ``work`` in a forked copy of this process, its output going to ``log``.

    A fork costs milliseconds where a fresh interpreter costs a second, which keeps twenty
    kill trials fast; the child is a real process, so SIGKILL ends it as it ends any other.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return Child(pid, log)
    code = 1
    try:
        handle = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, 1)
        os.dup2(handle, 2)
        # the child's streams live until os._exit below, so no context manager closes them
        sys.stdout = open(1, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
        signal.signal(signal.SIGINT, signal.default_int_handler)
        work()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def fork_cli(args: Sequence[str], log: Path) -> Child:
    """``canon ARGS`` in a forked process (the click command, as ``python -m canon`` runs it)."""
    from canon.cli import main

    return fork_call(lambda: main.main(args=list(args), prog_name="canon"), log)


def spawn_cli(args: Sequence[str], log: Path, env: dict[str, str] | None = None) -> Child:
    """``python -m canon.cli ARGS`` as a fresh interpreter."""
    with open(log, "wb") as stream:
        popen = subprocess.Popen(
            [sys.executable, "-m", "canon.cli", *args],
            stdout=stream,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    return Child(popen.pid, log, popen)


# A trial is a generator that yields what it waits for: a number of seconds, or a
# predicate to become true. Trials spend their time waiting, so several run at once.
Trial = Generator["float | Callable[[], bool]", None, None]


def run_together(trials: dict[str, Trial], timeout: float = 60.0) -> None:
    """Drive the trials side by side; fail naming every trial that failed or hung."""
    waiting: dict[str, tuple[Trial, Callable[[], bool], float]] = {}
    failures: dict[str, BaseException] = {}

    def advance(name: str, trial: Trial) -> None:
        try:
            step = next(trial)
        except StopIteration:
            return
        except Exception as exc:
            failures[name] = exc
            return
        if callable(step):
            ready = step
        else:
            at = time.monotonic() + step
            ready = lambda: time.monotonic() >= at  # noqa: E731 - one moment per step
        waiting[name] = (trial, ready, time.monotonic() + timeout)

    for name, trial in trials.items():
        advance(name, trial)
    try:
        while waiting:
            moved = False
            for name, (trial, ready, deadline) in list(waiting.items()):
                if ready():
                    del waiting[name]
                    advance(name, trial)
                    moved = True
                elif time.monotonic() > deadline:
                    del waiting[name]
                    trial.close()  # its finally clauses stop its processes
                    failures[name] = AssertionError(f"waited more than {timeout} s")
            if not moved:
                time.sleep(0.002)
    finally:
        for trial, _, _ in waiting.values():
            trial.close()
    if failures:
        lines = [f"{name}: {type(exc).__name__}: {exc}" for name, exc in failures.items()]
        raise AssertionError(f"{len(failures)} trial(s) failed:\n" + "\n".join(lines))


@pytest.fixture
def kill_kit() -> Any:
    """The process helpers of the kill -9 trials."""

    class Kit:
        fork = staticmethod(fork_call)
        cli = staticmethod(fork_cli)
        spawn = staticmethod(spawn_cli)
        together = staticmethod(run_together)

    return Kit

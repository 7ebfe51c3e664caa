"""Median wall time of `canon --help` and `import canon` (target for --help: < 150 ms).

Run: .venv/bin/python benchmarks/bench_cli_startup.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

CANON = Path(sys.executable).with_name("canon")


def median_ms(command: list[str], runs: int) -> float:
    """Median wall time of a command in milliseconds (after one warm-up run)."""
    subprocess.run(command, capture_output=True, check=True)
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    python = sys.executable
    baseline = median_ms([python, "-c", "pass"], runs)
    print(f"python -c pass         {baseline:7.1f} ms (interpreter start, for reference)")
    print(f"python -c 'import canon' {median_ms([python, '-c', 'import canon'], runs):5.1f} ms")
    print(
        f"canon --help           {median_ms([str(CANON), '--help'], runs):7.1f} ms (target < 150)"
    )


if __name__ == "__main__":
    main()

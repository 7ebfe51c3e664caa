"""Median wall time of `canon --help` and `import canon` (target for --help: < 150 ms).

Run: .venv/bin/python benchmarks/bench_cli_startup.py [RUNS] [--against TREE]

With ``--against TREE`` (another checkout, e.g. a git worktree of an older commit) both trees
are timed in one run, alternating, each through ``python -c`` with its own folder first on
``sys.path``, so a layout change can be compared side by side on the same loaded machine.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CANON = Path(sys.executable).with_name("canon")
HERE = Path(__file__).resolve().parent.parent
HELP = "import sys; sys.argv = ['canon', '--help']; from canon.cli import main; main()"


def median_ms(command: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    """Median wall time of a command in milliseconds (after one warm-up run)."""
    subprocess.run(command, capture_output=True, check=True, env=env)
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, env=env)
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings)


def side_by_side(runs: int, other: Path) -> None:
    """Alternate this tree and another one, the same commands, and print both medians."""
    trees = {"this tree": HERE, str(other): other}
    samples: dict[str, dict[str, list[float]]] = {
        name: {"import": [], "help": []} for name in trees
    }
    for _ in range(runs):
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree)}
            for kind, code in (("import", "import canon"), ("help", HELP)):
                samples[name][kind].append(median_ms([sys.executable, "-c", code], 1, env))
    for name, kinds in samples.items():
        print(
            f"{name:>40}: import canon {statistics.median(kinds['import']):6.1f} ms, "
            f"canon --help {statistics.median(kinds['help']):6.1f} ms"
        )


def main() -> None:
    args = sys.argv[1:]
    runs = int(args[0]) if args and args[0].isdigit() else 21
    if "--against" in args:
        side_by_side(runs, Path(args[args.index("--against") + 1]).resolve())
        return
    python = sys.executable
    baseline = median_ms([python, "-c", "pass"], runs)
    print(f"python -c pass         {baseline:7.1f} ms (interpreter start, for reference)")
    print(f"python -c 'import canon' {median_ms([python, '-c', 'import canon'], runs):5.1f} ms")
    print(
        f"canon --help           {median_ms([str(CANON), '--help'], runs):7.1f} ms (target < 150)"
    )


if __name__ == "__main__":
    main()

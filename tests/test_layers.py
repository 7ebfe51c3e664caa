"""The package layout shows the layers, and every import between files goes downward."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import canon

# Each package's rank: a file may import from its own package or from a package of a lower
# rank, never upward and never sideways to a peer of the same rank. docs/development.md shows
# the same map.
LAYERS = {
    "errors": 0,  # the CanonError tree
    "core": 1,  # constitution, rubric, prompt, scoring, statistics, evidence, baseline, compare
    "gates": 2,  # the policy checker and trace contracts (pure: they take parsed values)
    "judge": 3,  # judges: MockJudge, litellm and direct HTTP paths, cache, batch, concurrency
    "project": 4,  # a project's files: config, .env, stores, suites, contract files, judge specs
    "check": 5,  # orchestration: score, gates, confirm, the check, calibrate, spend, metric
    "report": 6,  # text, JSON, JUnit, HTML and GitHub renderings of results
    "monitor": 6,  # the directory and CloudWatch monitors
    "playground": 6,  # the policy playground's loopback page
    "cli": 7,  # the click commands
    "pytest_plugin": 7,  # the pytest plugin and pytest-native baselines
    "canon": 8,  # the facade, canon/__init__.py (its names load lazily)
    "__main__": 8,  # python -m canon
}


def _modules(package: Path) -> dict[str, Path]:
    """Every module of the tree by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "canon"


def _imported(path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The tree's modules a file imports, at the top or inside a function."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        yield from (name for name in names if name in known)


def top_level_entries(package: Path) -> set[str]:
    """The modules at the top of the package, beside its subpackages."""
    return {p.name for p in package.iterdir() if p.is_file() and p.suffix == ".py"}


def layer_offences(package: Path) -> list[str]:
    """Every import that goes upward or sideways, and every module outside the layer map."""
    known = _modules(package)
    offences = []
    for module, path in known.items():
        layer = _layer(module)
        if layer not in LAYERS:
            offences.append(f"{module}: package {layer!r} has no layer in tests/test_layers.py")
            continue
        for target in sorted(set(_imported(path, known))):
            other = _layer(target)
            if other == layer or (other in LAYERS and LAYERS[other] < LAYERS[layer]):
                continue
            offences.append(f"{module} ({layer}) imports {target} ({other})")
    return offences


def module_cycles(package: Path) -> list[list[str]]:
    """Groups of files that import each other, directly or through others (Tarjan's SCCs)."""
    known = _modules(package)
    edges = {m: sorted(set(_imported(p, known)) - {m}) for m, p in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in edges:
        if node not in index:
            visit(node)
    return sorted(cycles)


PACKAGE = Path(canon.__file__).resolve().parent


def test_the_top_of_canon_holds_only_packages_the_facade_main_and_errors():
    assert top_level_entries(PACKAGE) == {"__init__.py", "__main__.py", "errors.py"}


def test_every_package_of_canon_has_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(LAYERS) - {"canon", "errors", "__main__"}


def test_every_import_between_packages_goes_downward():
    assert layer_offences(PACKAGE) == []


def test_no_two_files_import_each_other_even_through_others():
    assert module_cycles(PACKAGE) == []


def test_every_package_says_what_it_holds_and_may_import():
    for package in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        text = (package / "__init__.py").read_text(encoding="utf-8")
        assert text.lstrip().startswith('"""'), package.name
        docstring = text.split('"""')[1].lower()
        assert "import" in docstring, f"{package.name}: the docstring names no imports"


def _plant(root: Path, relative: str, text: str) -> None:
    path = root / "canon" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in [path.parent, *path.parent.parents]:
        if parent == root:
            break
        (parent / "__init__.py").touch()
    path.write_text(text, encoding="utf-8")


def test_a_planted_upward_import_is_an_offence(tmp_path):
    _plant(tmp_path, "core/scoring.py", "from canon.cli.run import build_plan\n")
    _plant(tmp_path, "cli/run.py", "from canon.core.scoring import score\n")
    offences = layer_offences(tmp_path / "canon")
    assert offences == ["canon.core.scoring (core) imports canon.cli.run (cli)"]


def test_a_planted_import_between_peers_is_an_offence(tmp_path):
    _plant(tmp_path, "monitor/directory.py", "import canon.report.text\n")
    _plant(tmp_path, "report/text.py", "X = 1\n")
    assert layer_offences(tmp_path / "canon") == [
        "canon.monitor.directory (monitor) imports canon.report.text (report)"
    ]


def test_a_lazy_import_inside_a_function_counts_too(tmp_path):
    _plant(tmp_path, "judge/mock.py", "def f():\n    from canon.check import pipeline\n")
    _plant(tmp_path, "check/pipeline.py", "X = 1\n")
    assert layer_offences(tmp_path / "canon") == [
        "canon.judge.mock (judge) imports canon.check (check)",
        "canon.judge.mock (judge) imports canon.check.pipeline (check)",
    ]


def test_a_planted_circle_between_two_files_is_found(tmp_path):
    _plant(tmp_path, "monitor/a.py", "from canon.monitor.b import x\n")
    _plant(tmp_path, "monitor/b.py", "def x():\n    import canon.monitor.a\n")
    assert module_cycles(tmp_path / "canon") == [["canon.monitor.a", "canon.monitor.b"]]


def test_a_new_package_without_a_layer_is_an_offence(tmp_path):
    _plant(tmp_path, "extras/thing.py", "from canon.core import x\n")
    _plant(tmp_path, "core/x.py", "x = 1\n")
    assert layer_offences(tmp_path / "canon") == [
        "canon.extras: package 'extras' has no layer in tests/test_layers.py",
        "canon.extras.thing: package 'extras' has no layer in tests/test_layers.py",
    ]

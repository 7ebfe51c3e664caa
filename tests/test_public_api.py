from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import canon

PACKAGE = Path(canon.__file__).resolve().parent

# Third-party modules the pure layers (errors, core, gates) must never import.
FORBIDDEN_IN_PURE = ("click", "yaml", "dotenv", "litellm", "pytest", "scipy", "boto3", "httpx")


def test_public_names_are_sorted_and_all_importable():
    assert canon.__all__ == sorted(canon.__all__)
    for name in canon.__all__:
        assert hasattr(canon, name), name


def test_dir_and_attributes_show_only_the_public_api():
    # the facade's own helpers (typing names, the future import) are not Canon's API
    assert [name for name in dir(canon) if not name.startswith("__")] == canon.__all__
    for helper in ("Any", "TYPE_CHECKING", "annotations", "importlib"):
        assert not hasattr(canon, helper), helper


def test_the_readme_imports_canon_names_from_canon_itself():
    text = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    imported = []
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("canon"):
                assert node.module == "canon", ast.unparse(node)  # no internal module paths
                imported += [alias.name for alias in node.names]
    assert "MockJudge" in imported
    assert set(imported) <= set(canon.__all__)


def test_the_documented_entry_points_are_public():
    for name in (
        "CoherenceMetric",
        "MockJudge",
        "constitution_from_file",
        "wilson_ci",
        "relevant_questions",
        "Artifact",
    ):
        assert name in canon.__all__


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _pure_modules() -> list[Path]:
    return [
        *(PACKAGE / "core").rglob("*.py"),
        PACKAGE / "errors.py",
        *(PACKAGE / "gates").rglob("*.py"),
    ]


def test_the_pure_core_and_gates_import_no_io_libraries():
    offenders = []
    for path in _pure_modules():
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IN_PURE):
                # The gates parse contract YAML text; yaml is allowed there, nowhere in core.
                if name == "yaml" and "gates" in path.parts:
                    continue
                # Significance tests need scipy; that one module imports it inside a function.
                if name.startswith("scipy") and path == PACKAGE / "core" / "significance.py":
                    continue
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return set(out.split())


def test_import_canon_pulls_in_neither_litellm_nor_scipy():
    loaded = _modules_after("import canon")
    assert "litellm" not in loaded
    assert "scipy" not in loaded


def test_canon_help_pulls_in_neither_litellm_nor_scipy():
    loaded = _modules_after(
        "import sys\nfrom canon.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert "litellm" not in loaded and "scipy" not in loaded
    assert "canon.cli.score" not in loaded  # subcommands load only when used


def test_every_public_name_has_a_home_and_nothing_else_does():
    assert set(canon._HOMES) == set(canon.__all__)
    import importlib

    for name, home in canon._HOMES.items():
        assert getattr(importlib.import_module(home), name) is getattr(canon, name)


def test_the_import_paths_the_docs_show_keep_working():
    from canon.check import baseline_from_run, check_run, compare_run, score_run
    from canon.gates.contracts import load_contract, validate
    from canon.gates.policy import evaluate_response, validate_policy
    from canon.judge.litellm_judge import LiteLLMJudge
    from canon.judge.mock import MockJudge
    from canon.monitor import MonitorStats, monitor_cloudwatch, monitor_directory

    assert all(
        callable(thing)
        for thing in (
            baseline_from_run,
            check_run,
            compare_run,
            score_run,
            load_contract,
            validate,
            evaluate_response,
            validate_policy,
            LiteLLMJudge,
            MockJudge,
            MonitorStats,
            monitor_cloudwatch,
            monitor_directory,
        )
    )


def test_the_pytest_entry_point_package_carries_the_hooks_and_fixtures():
    import canon.pytest_plugin as plugin

    for name in ("pytest_addoption", "pytest_sessionfinish", "pytest_terminal_summary"):
        assert callable(getattr(plugin, name))
    for name in ("canon_config", "canon_constitution", "canon_metric", "canon_baseline"):
        assert hasattr(plugin, name)

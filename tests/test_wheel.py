from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from support.cli import advised_pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """canon-testing built into a wheel, once for this module."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(dist),
            str(REPO),
        ],
        check=True,
        timeout=300,
    )
    return next(dist.glob("canon_testing-*.whl"))


def _deps_from_this_environment(python: Path) -> str:
    """Make the test environment's packages importable in the venv of ``python``, after its
    own site-packages (no download): the wheel's copy of canon, not the checkout, loads."""
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return site


def test_the_built_wheel_carries_the_rubric_and_loads_it_when_installed(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "canon = canon.pytest_plugin" in archive.read(entry_points).decode()
    assert "canon/_rubric/cdt-1.0.0.yaml" in names  # released versions stay shipped
    assert "canon/_rubric/cdt-1.1.0.yaml" in names

    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    site = _deps_from_this_environment(python)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    probe = (
        "import canon, canon.project.store as s; r = canon.load_rubric(); "
        "print(canon.__file__); print(r.id, r.version, r.fingerprint); "
        "from canon.gates.contracts import load_template; "
        "print(load_template('claims-processing-v1').name)"
    )
    out = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout.splitlines()
    assert out[0].startswith(site), out
    assert out[1].startswith("cdt 1.1.0 ")
    assert out[2] == "claims-processing-v1"  # bundled contract templates ship too
    from canon import load_rubric

    assert out[1].split()[2] == load_rubric().fingerprint


def test_pytest_is_a_dependency_and_init_then_its_advised_pytest_passes(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [
            line.removeprefix("Requires-Dist: ")
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
    assert "pytest>=8" in requires  # unconditional: no extra needed for the fixtures

    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    # pip (run from this environment) installs the wheel as a user's pip would, scripts
    # included; its dependencies come from this environment, so nothing is downloaded.
    pip = [sys.executable, "-m", "pip", "--python", str(fresh / "bin" / "python")]
    subprocess.run(
        [*pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    _deps_from_this_environment(fresh / "bin" / "python")
    project = tmp_path / "project"
    project.mkdir()
    env = {
        **os.environ,
        "PATH": f"{fresh / 'bin'}{os.pathsep}{os.defpath}",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    init = subprocess.run(
        [str(fresh / "bin" / "canon"), "init"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    command = advised_pytest(init.stdout)
    assert command[0] in ("pytest", str(fresh / "bin" / "python")), command
    tests = subprocess.run(
        [*command, "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "1 passed" in tests.stdout

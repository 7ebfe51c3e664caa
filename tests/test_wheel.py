from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_the_built_wheel_carries_the_rubric_and_loads_it_when_installed(tmp_path):
    dist = tmp_path / "dist"
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
    wheel = next(dist.glob("canon_testing-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "canon = canon.pytest_plugin" in archive.read(entry_points).decode()
    assert "canon/_rubric/cdt-1.0.0.yaml" in names  # released versions stay shipped
    assert "canon/_rubric/cdt-1.1.0.yaml" in names

    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    # Dependencies come from the test environment's site-packages, appended after the fresh
    # venv's own, so the wheel's copy of canon (not the editable checkout) is what loads.
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
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

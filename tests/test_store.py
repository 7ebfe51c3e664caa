from __future__ import annotations

import json
import os
import stat

import pytest

from canon.errors import InputError
from canon.project.store import dump_json, read_json, write_bytes_atomic, write_json_atomic


def test_json_is_written_deterministically_with_a_trailing_newline(tmp_path):
    target = tmp_path / "deep" / "out.json"
    write_json_atomic(target, {"b": 1, "a": [1, {"d": 2, "c": 3}]})
    text = target.read_text()
    assert text == dump_json({"a": [1, {"c": 3, "d": 2}], "b": 1})
    assert text.endswith("}\n") and text.index('"a"') < text.index('"b"')


def test_atomic_writes_leave_no_temporary_files_and_ordinary_permissions(tmp_path):
    target = tmp_path / "out.json"
    write_json_atomic(target, {"x": 1})
    write_json_atomic(target, {"x": 2})
    assert json.loads(target.read_text()) == {"x": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664], ids=oct)
def test_a_replaced_file_keeps_its_permissions(tmp_path, mode):
    target = tmp_path / "baseline.json"
    target.write_text("{}")
    target.chmod(mode)
    write_json_atomic(target, {"x": 1})
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert json.loads(target.read_text()) == {"x": 1}


def test_a_new_file_follows_the_umask_not_mkstemps_0600(tmp_path):
    previous = os.umask(0o022)
    try:
        write_bytes_atomic(tmp_path / "new.json", b"{}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644


def test_an_explicit_mode_is_applied(tmp_path):
    target = tmp_path / "private.json"
    write_bytes_atomic(target, b"{}", mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_failed_write_keeps_the_old_file_and_cleans_up(tmp_path):
    target = tmp_path / "out.json"
    write_json_atomic(target, {"keep": True})
    with pytest.raises(TypeError):
        write_json_atomic(target, {"bad": object()})  # not serializable: fails before writing
    with pytest.raises(OSError):
        write_bytes_atomic(tmp_path / "out.json" / "child.json", b"x")  # parent is a file
    assert json.loads(target.read_text()) == {"keep": True}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_read_json_refuses_non_finite_numbers_and_names_the_file(tmp_path):
    path = tmp_path / "in.json"
    path.write_text('{"x": NaN}')
    with pytest.raises(InputError, match=r"in\.json: response is not valid JSON"):
        read_json(path, "response")


def test_write_new_file_takes_the_first_free_name_and_never_overwrites(tmp_path):
    from canon.project.store import write_new_file

    names = ["a.json", "a_2.json", "a_3.json"]
    first = write_new_file(tmp_path, names, b"one")
    second = write_new_file(tmp_path, names, b"two")
    assert (first.name, second.name) == ("a.json", "a_2.json")
    assert first.read_bytes() == b"one" and second.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a_2.json"]  # no temp files


def test_write_new_file_fails_when_every_name_is_taken(tmp_path):
    from canon.project.store import write_new_file

    (tmp_path / "a.json").write_text("kept")
    with pytest.raises(FileExistsError):
        write_new_file(tmp_path, ["a.json"], b"new")
    assert (tmp_path / "a.json").read_text() == "kept"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_read_bytes_refuses_a_file_over_its_limit_naming_the_limit(tmp_path):
    from canon.project.store import read_bytes

    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 2049)
    assert read_bytes(path, "trace", limit=2049) == b"x" * 2049
    with pytest.raises(InputError, match=r"big\.json: trace is larger than the limit of 2,048"):
        read_bytes(path, "trace", limit=2048)


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "loop"])
def test_read_bytes_refuses_what_is_not_a_regular_file_without_blocking(tmp_path, kind):
    from canon.project.store import read_bytes

    path = tmp_path / "input.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        path = type(path)("/dev/zero")
    else:
        os.symlink("input.json", path)
    with pytest.raises(InputError, match=str(path)) as caught:
        read_bytes(path, "trace")
    expected = {
        "fifo": "is a FIFO",
        "directory": "is a directory",
        "device": "device",
        "loop": "symbolic links",
    }
    assert expected[kind] in str(caught.value)


def test_read_json_refuses_duplicate_members_and_deep_nesting(tmp_path):
    path = tmp_path / "in.json"
    path.write_text('{"a": {"b": 1, "b": 2}}')
    with pytest.raises(InputError, match='duplicate object member "b"'):
        read_json(path, "baseline")
    path.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_json(path, "baseline")


def test_yaml_nesting_is_refused_past_the_limit_and_accepted_below_it():
    from canon.project.store import MAX_YAML_DEPTH, parse_yaml

    depth = MAX_YAML_DEPTH - 1  # the top-level mapping is one level itself
    assert parse_yaml("a: " + "[" * depth + "]" * depth, "ok.yaml") is not None
    depth += 1
    with pytest.raises(InputError, match=r"deep\.yaml: not valid YAML: nested deeper than 64"):
        parse_yaml("a: " + "[" * depth + "]" * depth, "deep.yaml")


def test_stale_temp_files_of_killed_writes_are_swept_and_nothing_else(tmp_path):
    from canon.project.store import STALE_TEMP_SECONDS

    target = tmp_path / "suite.json"
    stale = tmp_path / ".suite.json.abcd1234.tmp"
    fresh = tmp_path / ".suite.json.zzzz9999.tmp"  # a write in progress elsewhere
    foreign = [tmp_path / ".other.json.abcd1234.tmp", tmp_path / ".suite.json.mine.tmp"]
    old = os.path.getmtime(tmp_path) - STALE_TEMP_SECONDS - 60
    for path in (stale, fresh, *foreign):
        path.write_text("half")
    for path in (stale, *foreign):
        os.utime(path, (old, old))
    write_json_atomic(target, {"x": 1})
    assert not stale.exists()
    assert fresh.exists() and all(path.exists() for path in foreign)

    records = tmp_path / "records"
    records.mkdir()
    left = records / ".canon-q1w2e3r4.tmp"
    left.write_text("half")
    os.utime(left, (old, old))
    from canon.project.store import write_new_file

    write_new_file(records, ["a.json"], b"{}")
    assert sorted(p.name for p in records.iterdir()) == ["a.json"]

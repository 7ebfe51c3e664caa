"""Reading and writing Canon's files: strict YAML/JSON readers and atomic writers."""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from canon.core.constitution import Constitution, constitution_from_mapping
from canon.core.rubric import Rubric, rubric_from_mapping
from canon.errors import CanonError, ConstitutionError, InputError, RubricError

RUBRIC_FILE = "cdt-1.0.0.yaml"


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses duplicate keys instead of keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_text(path: Path, what: str, error: type[CanonError] = InputError) -> str:
    """Read a UTF-8 text file, turning OS and decoding failures into ``error``."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{what} not found at {path}") from None
    except IsADirectoryError:
        raise error(f"{what} at {path} is a directory, expected a file") from None
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: {what} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except OSError as exc:
        raise error(f"{what} at {path} cannot be read: {exc.strerror}") from None


def parse_yaml(text: str, source: str, error: type[CanonError] = InputError) -> Any:
    """Parse YAML text strictly (safe tags only, no duplicate keys)."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise error(f"{source}: not valid YAML: {_yaml_problem(exc)}") from None


def read_yaml(path: Path, what: str, error: type[CanonError] = InputError) -> Any:
    """Read and strictly parse a YAML file."""
    return parse_yaml(read_text(path, what, error), str(path), error)


def read_json(path: Path, what: str, error: type[CanonError] = InputError) -> Any:
    """Read a JSON file, refusing NaN/Infinity."""
    text = read_text(path, what, error)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise error(f"{path}: {what} is not valid JSON: {exc}") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    mark = getattr(exc, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else str(problem)


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write bytes so that readers see the old file or the new one, never half of one.

    ``mode`` sets the file's permissions; by default they follow the umask like any new file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        # mkstemp makes a private 0600 file; give the final file ordinary permissions.
        os.chmod(temp_name, mode if mode is not None else 0o666 & ~_umask())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def write_new_file(directory: Path, names: Iterable[str], data: bytes) -> Path:
    """Write ``data`` complete under the first of ``names`` that does not exist yet.

    The bytes go to a temporary file first and are then hard-linked into place, which
    fails if the name is taken: a reader never sees a partial file, and two writers never
    take the same name.
    """
    directory.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=".canon-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp_name, 0o666 & ~_umask())
        for name in names:
            target = directory / name
            try:
                os.link(temp_name, target)
            except FileExistsError:
                continue
            return target
        raise FileExistsError(f"every candidate name in {directory} is taken")
    finally:
        Path(temp_name).unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write UTF-8 text atomically (see ``write_bytes_atomic``)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def dump_json(data: Any) -> str:
    """Canon's deterministic JSON: sorted keys, indent 2, trailing newline."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write deterministic JSON atomically."""
    write_text_atomic(path, dump_json(data))


def constitution_from_file(path: str | os.PathLike[str]) -> Constitution:
    """Read a constitution from a YAML file (mission + ordered principles)."""
    file = Path(path)
    data = read_yaml(file, "constitution", ConstitutionError)
    return constitution_from_mapping(data, source=str(file))


def _rubric_text() -> tuple[str, str]:
    # An installed wheel carries the data inside the package; a source checkout keeps it
    # in the top-level rubric/ folder that readers open.
    packaged = resources.files("canon").joinpath("_rubric", RUBRIC_FILE)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8"), str(packaged)
    checkout = Path(__file__).resolve().parent.parent / "rubric" / RUBRIC_FILE
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8"), str(checkout)
    raise RubricError(
        f"the packaged rubric {RUBRIC_FILE} is missing from this installation; "
        "reinstall canon-testing"
    )


@functools.cache
def load_rubric() -> Rubric:
    """The packaged CDT rubric (read once per process)."""
    text, source = _rubric_text()
    return rubric_from_mapping(parse_yaml(text, source, RubricError), source=source)

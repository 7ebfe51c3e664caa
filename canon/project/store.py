"""Reading and writing Canon's files: strict YAML/JSON readers and atomic writers."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from canon.core.constitution import Constitution, constitution_from_mapping
from canon.core.rubric import Rubric, rubric_from_mapping
from canon.errors import CanonError, ConstitutionError, InputError, RubricError
from canon.gates.yaml_mapping import unique_key_mapping

RUBRIC_FILE = "cdt-1.1.0.yaml"

# Every file Canon reads is read whole, so each kind has a ceiling (docs/configuration.md).
MIB = 1024 * 1024
SETTINGS_LIMIT = 1 * MIB  # canon.yaml, pyproject.toml, .env, constitution, contract
DEFAULT_LIMIT = 16 * MIB  # suites, traces, mock judge scripts, everything else
BASELINE_LIMIT = 64 * MIB  # a baseline holds every cell of every artifact
# A temp file this old was left by a killed write (a real write takes milliseconds).
STALE_TEMP_SECONDS = 600
# Deeper nesting than any Canon file needs; refused before the parser recurses too far.
MAX_YAML_DEPTH = 64


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses duplicate keys and absurd nesting."""

    _depth = 0

    # Only collections nest, so only they are counted: a scalar costs nothing extra.
    def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
        """Compose a list, one level deeper."""
        with self._nested():
            return super().compose_sequence_node(anchor)

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        """Compose a mapping, one level deeper."""
        with self._nested():
            return super().compose_mapping_node(anchor)

    @contextlib.contextmanager
    def _nested(self) -> Iterator[None]:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", mark
                )
            yield
        finally:
            self._depth -= 1


# The gates' constructor: the store reads files, the gates own what a YAML mapping may hold.
_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, unique_key_mapping)


def _construct_text(loader: _StrictLoader, node: yaml.ScalarNode) -> str:
    # A "\ud800" escape makes a lone surrogate, which no file, digest or report can hold.
    value: str = loader.construct_scalar(node)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise yaml.constructor.ConstructorError(
            None, None, f"text holds a lone surrogate ({exc.object[exc.start]!a})", node.start_mark
        ) from None
    return value


_StrictLoader.add_constructor("tag:yaml.org,2002:str", _construct_text)


def read_bytes(
    path: Path, what: str, error: type[CanonError] = InputError, *, limit: int = DEFAULT_LIMIT
) -> bytes:
    """Read a regular file of at most ``limit`` bytes; anything else raises ``error``.

    Directories, FIFOs, devices and symlink loops are refused before a byte is read, so a
    hostile path can neither block the run nor fill the memory.
    """
    try:
        info = os.stat(path)  # follows symlinks; a loop fails here with ELOOP
    except FileNotFoundError:
        raise error(f"{what} not found at {path}") from None
    except OSError as exc:
        raise error(f"{what} at {path} cannot be read: {exc.strerror or exc}") from None
    _require_regular(info, path, what, error)
    if info.st_size > limit:
        raise _too_large(path, what, error, limit)
    try:
        # O_NONBLOCK: a FIFO swapped in after the check above cannot block the open.
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(handle, "rb") as stream:
            _require_regular(os.fstat(stream.fileno()), path, what, error)
            data = stream.read(limit + 1)
    except OSError as exc:
        raise error(f"{what} at {path} cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise _too_large(path, what, error, limit)
    return data


def _require_regular(info: os.stat_result, path: Path, what: str, error: type[CanonError]) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{what} at {path} is a directory, expected a file")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        raise error(f"{what} at {path} is {kind}, expected a regular file")


def _too_large(path: Path, what: str, error: type[CanonError], limit: int) -> CanonError:
    size = f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit:,} bytes"
    return error(f"{path}: {what} is larger than the limit of {size}")


def read_text(
    path: Path, what: str, error: type[CanonError] = InputError, *, limit: int = DEFAULT_LIMIT
) -> str:
    """Read a UTF-8 text file (see ``read_bytes``), turning decoding failures into ``error``."""
    data = read_bytes(path, what, error, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: {what} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def parse_yaml(text: str, source: str, error: type[CanonError] = InputError) -> Any:
    """Parse YAML text strictly (safe tags only, no duplicate keys)."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise error(f"{source}: not valid YAML: {_yaml_problem(exc)}") from None
    except RecursionError:  # a backstop: the loader refuses deep nesting itself
        raise error(f"{source}: not valid YAML: nested too deeply") from None


def read_yaml(
    path: Path, what: str, error: type[CanonError] = InputError, *, limit: int = DEFAULT_LIMIT
) -> Any:
    """Read and strictly parse a YAML file."""
    return parse_yaml(read_text(path, what, error, limit=limit), str(path), error)


def read_json(
    path: Path, what: str, error: type[CanonError] = InputError, *, limit: int = DEFAULT_LIMIT
) -> Any:
    """Read a JSON file, refusing NaN/Infinity and duplicate object members."""
    text = read_text(path, what, error, limit=limit)
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique)
    except (json.JSONDecodeError, ValueError) as exc:
        raise error(f"{path}: {what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise error(f"{path}: {what} is not valid JSON: nested too deeply") from None


def loads_strict(text: str) -> Any:
    """One JSON text as suite and label lines are read: no NaN/Infinity, no repeated key."""
    return json.loads(text, object_pairs_hook=_unique_key, parse_constant=_refuse_constant)


def _unique_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping: dict[str, Any] = {}
    for key, value in pairs:
        if key in mapping:
            raise ValueError(f"duplicate key {key!r}")
        mapping[key] = value
    return mapping


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate object member {json.dumps(key)}")
            seen.add(key)
    return members


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    mark = getattr(exc, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else str(problem)


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write bytes so that readers see the old file or the new one, never half of one.

    ``mode`` sets the file's permissions; by default a replaced file keeps its own and a new
    one follows the umask, like any file a tool writes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temps(path.parent, f".{path.name}.")
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        # mkstemp makes a private 0600 file; give the final file the permissions it should have.
        os.chmod(temp_name, mode if mode is not None else _mode_for(path))
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
    sweep_stale_temps(directory, ".canon-")
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


def sweep_stale_temps(directory: Path, prefix: str, *, now: float | None = None) -> list[Path]:
    """Delete temp files a killed write left in ``directory``; return what was deleted.

    Only Canon's own names (``prefix`` + mkstemp's 8 random characters + ``.tmp``) that are
    older than ``STALE_TEMP_SECONDS`` go: a write in progress elsewhere is never touched.
    """
    pattern = re.compile(re.escape(prefix) + r"[a-z0-9_]{8}\.tmp")
    cutoff = (time.time() if now is None else now) - STALE_TEMP_SECONDS
    swept: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return swept  # sweeping is housekeeping: the write itself reports real problems
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                swept.append(Path(entry.path))
        except OSError:
            continue
    return swept


def write_text_atomic(path: Path, text: str) -> None:
    """Write UTF-8 text atomically (see ``write_bytes_atomic``)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _mode_for(path: Path) -> int:
    """The permissions a write to ``path`` gives: the existing file's, else the umask's."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


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
    checkout = Path(__file__).resolve().parents[2] / "rubric" / RUBRIC_FILE
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

"""Setting ``judge_model`` in a canon.yaml's text without disturbing the rest of the file.

The edit works on the text, not on a parsed-and-redumped mapping, so comments, key order,
quoting and line endings elsewhere in the file survive byte for byte. PyYAML's node marks
say exactly where the old value sits; only that span changes (or one line is appended).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from canon.errors import ConfigError
from canon.project.store import parse_yaml

KEY = "judge_model"
# Values made only of these characters can stay unquoted, as long as YAML reads them back
# as the same string (``1:20`` is a YAML 1.1 number, ``null`` is null, so those get quotes).
_PLAIN_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/@+=~-]*")
_MISSING = object()
_STR_TAG = "tag:yaml.org,2002:str"


@dataclass(frozen=True, slots=True)
class JudgeModelEdit:
    """The edited text of a config file, and what ``judge_model`` held before."""

    text: str
    previous: object  # the old parsed value; None when it was absent or empty
    added: bool  # True when the key was not in the file and a line was appended


def yaml_scalar(value: str) -> str:
    """``value`` as a one-line YAML scalar: plain when safe, else double-quoted."""
    if _PLAIN_SAFE.fullmatch(value) and _reads_back(value, value):
        return value
    return _double_quoted(value)


def new_config_text(model: str) -> str:
    """The text of a fresh canon.yaml that sets only ``judge_model``."""
    return f"{KEY}: {yaml_scalar(model)}\n"


def set_judge_model(text: str, model: str, *, source: str) -> JudgeModelEdit:
    """Return ``text`` with its top-level ``judge_model`` set to ``model``.

    Replaces the existing value in place (keeping any trailing comment), or appends a
    ``judge_model:`` line when the key is absent. Raises ConfigError when the file is not a
    YAML mapping, holds the key twice, or holds a value that cannot be replaced on its line;
    ``source`` names the file in those messages.
    """
    root = _compose(text, source)
    if root is not None and not isinstance(root, yaml.MappingNode):
        kind = "list" if isinstance(root, yaml.SequenceNode) else "single value"
        raise ConfigError(
            f"{source}: expected a mapping of settings (key: value lines), got a {kind}; "
            f"fix the file or point --config at your canon.yaml"
        )
    pairs = [] if root is None else [p for p in root.value if _is_key(p[0])]
    if len(pairs) > 1:
        lines = " and ".join(str(key.start_mark.line + 1) for key, _ in pairs)
        raise ConfigError(
            f"{source}: {KEY} is set more than once (lines {lines}); "
            f"delete all but one, then run set-judge again"
        )
    # The same strict reading Canon uses; it also refuses duplicate keys deeper down.
    before = parse_yaml(text, source, ConfigError) if root is not None else {}
    scalar = yaml_scalar(model)
    if pairs:
        key_node, value_node = pairs[0]
        start, end = _value_span(key_node, value_node, source)
        # An empty value ends right after the colon, so it needs a separating space.
        replacement = scalar if end > start else f" {scalar}"
        new_text = text[:start] + replacement + text[end:]
    else:
        if root is not None and root.flow_style:
            raise ConfigError(
                f"{source}: the settings are written as a flow mapping ({{...}}); "
                f"add '{KEY}: {scalar}' inside the braces by hand"
            )
        indent = " " * (root.start_mark.column if root is not None else 0)
        new_text = _with_final_newline(text) + f"{indent}{KEY}: {scalar}{_newline(text)}"
    # Read from the parsed mapping, so a value that came in through a merge key (<<) counts.
    previous = before.get(KEY)
    if previous == model:
        return JudgeModelEdit(text=text, previous=previous, added=False)
    _check_result(before, new_text, model, source)
    return JudgeModelEdit(text=new_text, previous=previous, added=not pairs)


def _compose(text: str, source: str) -> yaml.Node | None:
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or exc
        raise ConfigError(
            f"{source}: not valid YAML: {problem}{where}; fix the file, then run set-judge again"
        ) from None
    return node


def _is_key(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _STR_TAG and node.value == KEY


def _value_span(key: yaml.Node, value: yaml.Node, source: str) -> tuple[int, int]:
    line = key.start_mark.line + 1
    where = f"{source}, line {line}"
    # An alias resolves to the anchored node, whose marks point at the anchor elsewhere.
    if value.start_mark.index < key.end_mark.index:
        raise ConfigError(
            f"{where}: {KEY} is an alias (*name) of another value; "
            f"replace it with a plain value by hand, then run set-judge again"
        )
    if not isinstance(value, yaml.ScalarNode):
        kind = "mapping" if isinstance(value, yaml.MappingNode) else "list"
        raise ConfigError(
            f"{where}: {KEY} holds a {kind}, expected one provider:model string; "
            f"replace it with a single line, then run set-judge again"
        )
    if value.style in ("|", ">") or value.start_mark.line != value.end_mark.line:
        raise ConfigError(
            f"{where}: {KEY} spans several lines (a block or multi-line value), expected "
            f"one provider:model string on one line; rewrite it on one line, then run "
            f"set-judge again"
        )
    return value.start_mark.index, value.end_mark.index


def _check_result(before: Mapping[Any, Any], new_text: str, model: str, source: str) -> None:
    # The edit is local by construction; this makes sure YAML agrees before anything is
    # written, so a file the splice cannot handle is refused instead of damaged.
    try:
        after = parse_yaml(new_text, source, ConfigError)
    except ConfigError as exc:
        problem: str | None = f"the edited text would not parse ({exc})"
    else:
        problem = None
        if not isinstance(after, Mapping) or after.get(KEY) != model:
            problem = f"the edited text would not read back {KEY}: {model!r}"
        elif not _same(_without_key(before), _without_key(after)):
            problem = "the edit would change other settings"
    if problem is not None:
        raise ConfigError(
            f"{source}: cannot set {KEY} safely: {problem}; "
            f"set '{KEY}: {yaml_scalar(model)}' by hand"
        )


def _without_key(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    return {k: v for k, v in mapping.items() if k != KEY}


def _same(a: object, b: object) -> bool:
    # Plain == would call a file with `threshold: .nan` changed, since nan != nan.
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _reads_back(written: str, value: str) -> bool:
    try:
        data = yaml.safe_load(f"{KEY}: {written}\n")
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and data.get(KEY, _MISSING) == value


def _double_quoted(value: str) -> str:
    parts = []
    for char in value:
        if char in ('"', "\\"):
            parts.append("\\" + char)
        elif _printable(ord(char)):
            parts.append(char)
        elif ord(char) <= 0xFF:
            parts.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            parts.append(f"\\u{ord(char):04x}")
        else:
            parts.append(f"\\U{ord(char):08x}")
    return '"' + "".join(parts) + '"'


def _printable(code: int) -> bool:
    # The characters YAML allows unescaped, less tab and the line breaks it would fold.
    return (
        0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or (0x10000 <= code <= 0x10FFFF)
    )


def _newline(text: str) -> str:
    # Follow the file's own line endings so a CRLF file stays CRLF throughout.
    return "\r\n" if "\r\n" in text else "\n"


def _with_final_newline(text: str) -> str:
    return text if text == "" or text.endswith(("\n", "\r")) else text + _newline(text)

"""The constitution: a mission and ordered principles, validated from plain data."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from canon.errors import ConstitutionError

_ALLOWED_KEYS = frozenset({"mission", "principles"})
_PRINCIPLE_KEYS = frozenset({"id", "text"})


@dataclass(frozen=True, slots=True)
class Principle:
    """One principle: its text and an optional stable id chosen by the team."""

    text: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Constitution:
    """What a team's agents are held to: a mission and ordered principles."""

    mission: str
    principles: tuple[Principle, ...]

    @property
    def digest(self) -> str:
        """A stable content digest, recorded in baselines."""
        payload = {
            "mission": self.mission,
            "principles": [{"id": p.id, "text": p.text} for p in self.principles],
        }
        canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def constitution_from_mapping(data: object, *, source: str = "constitution") -> Constitution:
    """Validate plain data (as parsed from YAML) into a Constitution."""
    if not isinstance(data, Mapping):
        raise ConstitutionError(
            f"{source}: expected a mapping with 'mission' and 'principles', got {_describe(data)}"
        )
    unknown = sorted(str(k) for k in data if k not in _ALLOWED_KEYS)
    if unknown:
        raise ConstitutionError(
            f"{source}: unknown key(s) {', '.join(repr(k) for k in unknown)}; "
            "a constitution has only 'mission' and 'principles'"
        )
    mission = data.get("mission")
    if mission is None:
        raise ConstitutionError(f"{source}: 'mission' is missing; add a one-paragraph mission")
    if not isinstance(mission, str) or not mission.strip():
        raise ConstitutionError(
            f"{source}: 'mission' must be non-empty text, got {_describe(mission)}"
        )
    principles = _principles(data.get("principles"), source)
    return Constitution(mission=mission.strip(), principles=principles)


def _principles(raw: object, source: str) -> tuple[Principle, ...]:
    if raw is None:
        raise ConstitutionError(f"{source}: 'principles' is missing; list at least one principle")
    if not isinstance(raw, list):
        raise ConstitutionError(
            f"{source}: 'principles' must be a list of texts or {{id, text}} mappings, "
            f"got {_describe(raw)}"
        )
    if not raw:
        raise ConstitutionError(f"{source}: 'principles' is empty; list at least one principle")
    principles = tuple(_principle(item, index, source) for index, item in enumerate(raw, 1))
    _refuse_duplicates(principles, source)
    return principles


def _principle(item: object, index: int, source: str) -> Principle:
    where = f"{source}: principle {index}"
    if isinstance(item, str):
        if not item.strip():
            raise ConstitutionError(f"{where} is empty text; write the principle out")
        return Principle(text=item.strip())
    if isinstance(item, Mapping):
        unknown = sorted(str(k) for k in item if k not in _PRINCIPLE_KEYS)
        if unknown:
            raise ConstitutionError(
                f"{where}: unknown key(s) {', '.join(repr(k) for k in unknown)}; "
                "a principle mapping has only 'id' and 'text'"
            )
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ConstitutionError(
                f"{where}: 'text' must be non-empty text, got {_describe(text)}"
            )
        ident = item.get("id")
        if ident is not None and (not isinstance(ident, str) or not ident.strip()):
            raise ConstitutionError(f"{where}: 'id' must be non-empty text, got {_describe(ident)}")
        return Principle(text=text.strip(), id=ident.strip() if ident is not None else None)
    raise ConstitutionError(
        f"{where} must be text or a mapping with 'text' (and optional 'id'), got {_describe(item)}"
    )


def _refuse_duplicates(principles: tuple[Principle, ...], source: str) -> None:
    seen_text: dict[str, int] = {}
    seen_id: dict[str, int] = {}
    for index, principle in enumerate(principles, 1):
        folded = " ".join(principle.text.split()).casefold()
        if folded in seen_text:
            raise ConstitutionError(
                f"{source}: principle {index} repeats principle {seen_text[folded]} "
                f"({principle.text!r}); remove one of them"
            )
        seen_text[folded] = index
        if principle.id is not None:
            if principle.id in seen_id:
                raise ConstitutionError(
                    f"{source}: principle {index} reuses id {principle.id!r} "
                    f"of principle {seen_id[principle.id]}; ids must be unique"
                )
            seen_id[principle.id] = index


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return "empty text" if not value.strip() else f"text {value[:40]!r}"
    return f"a {type(value).__name__}"

"""Finding citations in an agent's final answer.

The patterns are anchored on word boundaries and demand a number (or an identifier with a
digit) after the keyword, so prose such as "the policy is clear" or "Part 2" is not a
citation. Overlapping matches merge into one and a repeated citation counts once.
"""

from __future__ import annotations

import re

_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        r"\b[Ss]ection\s+\d+(?:\.\d+)*[a-z]?\b",
        r"\b[Pp]olicy\s+(?:No\.?\s*|#\s*)?(?=[\w.\-]*\d)[A-Za-z0-9](?:[\w.\-]*[A-Za-z0-9])?",
        r"\[\d+\]",
        r"\([Rr]ef(?::\s*|\s+)[^()\s][^()]*\)",
        r"\b[Aa]rticle\s+\d+[a-z]?\b",
        r"\b\d+\s+CFR\s+\d+(?:\.\d+)*",
        r"\b[Dd]irective\s+\(EU\)\s*\d+/\d+",
        r"\b(?:Reg\.|Regulation)\s*\d+",
        r"\bArt\.\s*\d+",
    )
)


def find_citations(text: str | None) -> tuple[str, ...]:
    """Return the distinct citations in ``text``, in order of first appearance."""
    if not text:
        return ()
    spans = sorted(match.span() for pattern in _PATTERNS for match in pattern.finditer(text))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    found: dict[str, None] = {}
    for start, end in merged:
        # Whitespace is folded so "Section  4.2" and "Section 4.2" are one citation.
        found.setdefault(" ".join(text[start:end].split()), None)
    return tuple(found)

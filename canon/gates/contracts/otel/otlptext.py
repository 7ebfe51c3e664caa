"""Plain OTLP JSON text read straight into ``typed.OtlpDocument`` structs when msgspec is in
use: the fast road of ``normalize_trace_text``. Any other text is parsed by
``jsontext.loads``, which the readers of every format use (so this module, which imports
the typed road and through it the format registry, stays out of theirs)."""

from __future__ import annotations

from collections.abc import Callable

from canon.gates.contracts.otel.jsontext import collector_paused, msgspec_in_use


def _document_decoder() -> Callable[[str], list[object] | None] | None:
    """``typed.decode_documents`` when msgspec is in use, else None."""
    if not msgspec_in_use():  # not cached itself: blocking msgspec blocks this too
        return None
    from canon.gates.contracts.otel.typed import decode_documents  # imports msgspec

    return decode_documents  # type: ignore[return-value]  # of OtlpDocument


def otlp_documents(text: str) -> list[object] | None:
    """``text`` as ``typed.OtlpDocument`` structs (one, or one per JSON line) when msgspec
    is in use and the text is plain OTLP JSON spans, else None (parse it with ``loads``)."""
    decode = _document_decoder()
    if decode is None:
        return None
    return collector_paused(decode, text)

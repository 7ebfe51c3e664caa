"""Trace text parses to the same values and the same errors with msgspec as with json."""

from __future__ import annotations

import contextlib
import gc
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canon.gates.contracts.otel import TraceError, jsontext, parse_trace_text

from support.corpus import TESTS, TRACE_FILES

CORPUS_FILES = TRACE_FILES
BIG = 2**80 + 7
# JSON the standard library reads that msgspec reads differently or refuses
ODD_DOCUMENTS = (
    f'{{"traceId": {BIG}, "spanId": {-BIG}}}',
    '{"a": 1, "a": 2}',
    '{"score": NaN, "other": Infinity, "low": -Infinity}',
    '{"big": 1e400}',
    '{"text": "\\ud800 lone surrogate"}',
    '{"text": "\\ud83d\\ude00 \\u0000 \\u00e9"}',
    "[1.5e-400, -0.0, 0.1, 1E2, 123456789012345678901234567890.5]",
    '{"spans": [{"name": "a"}]}\n{"spans": [{"name": "b"}]}\n',
)
BAD_DOCUMENTS = ("{", '{"a": 1} trailing', "\ufeff[1]", "[" * 5000 + "]" * 5000, "nul\x00l")


@pytest.fixture(params=["msgspec", "json"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test runs with msgspec in use, and with it blocked (the default install)."""
    jsontext._fast_decoder.cache_clear()
    if request.param == "json":
        monkeypatch.setitem(sys.modules, "msgspec", None)  # import msgspec -> ImportError
    yield request.param
    jsontext._fast_decoder.cache_clear()


def _same(first: object, second: object) -> bool:
    """Equal as JSON values, NaN equal to NaN and every int and float kept apart."""
    if isinstance(first, float) and isinstance(second, float):
        return (math.isnan(first) and math.isnan(second)) or (
            first == second and math.copysign(1, first) == math.copysign(1, second)
        )
    if type(first) is not type(second):
        return False
    if isinstance(first, dict) and isinstance(second, dict):
        return list(first) == list(second) and all(_same(first[k], second[k]) for k in first)
    if isinstance(first, list) and isinstance(second, list):
        return len(first) == len(second) and all(map(_same, first, second))
    return first == second


def _error(text: str) -> str:
    with pytest.raises(TraceError) as caught:
        parse_trace_text(text, source="t.json")
    return str(caught.value)


def test_the_parser_in_use_is_named(parser: str) -> None:
    name = jsontext.json_parser()
    assert name.startswith("msgspec ") if parser == "msgspec" else name == "json (standard library)"


@pytest.mark.parametrize("text", ODD_DOCUMENTS)
def test_odd_json_reads_as_the_standard_library_reads_it(parser: str, text: str) -> None:
    expected = json.loads(text) if "\n{" not in text else [json.loads(t) for t in text.splitlines()]
    assert _same(parse_trace_text(text), expected)


def test_integers_past_64_bits_stay_exact_integers(parser: str) -> None:
    parsed = parse_trace_text(f'{{"id": {BIG}, "neg": {-BIG}, "u64": {2**64 - 1}}}')
    assert parsed == {"id": BIG, "neg": -BIG, "u64": 2**64 - 1}
    assert all(type(value) is int for value in parsed.values())  # type: ignore[union-attr]


@pytest.mark.parametrize("text", BAD_DOCUMENTS, ids=["open", "trailing", "bom", "deep", "nul"])
def test_bad_json_fails_with_the_same_message_with_either_parser(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    jsontext._fast_decoder.cache_clear()
    with_msgspec = _error(text)
    monkeypatch.setitem(sys.modules, "msgspec", None)
    jsontext._fast_decoder.cache_clear()
    assert _error(text) == with_msgspec
    assert with_msgspec.startswith("t.json: ")
    jsontext._fast_decoder.cache_clear()


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda path: path.name)
def test_every_corpus_file_parses_as_json_parses_it(path: Path, parser: str) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        expected: object = json.loads(text)
    except ValueError:
        try:
            expected = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            assert "not JSON" in _error(text)
            return
    assert _same(parse_trace_text(text), expected)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**100), max_value=2**100)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=JSON_VALUES, indent=st.sampled_from([None, 1]))
def test_any_json_value_reads_back_as_the_standard_library_reads_it(
    value: object, indent: int | None
) -> None:
    text = json.dumps({"v": value}, indent=indent, ensure_ascii=indent is None)
    assert _same(jsontext.loads(text), json.loads(text))


def test_a_release_that_rounds_big_integers_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    class Rounding:
        class json:  # stands in for the msgspec.json module
            class Decoder:
                def decode(self, text: str) -> object:
                    return [float(item) for item in json.loads(text)]

    jsontext._fast_decoder.cache_clear()
    monkeypatch.setitem(sys.modules, "msgspec", Rounding)
    assert jsontext.json_parser() == "json (standard library)"
    assert jsontext.loads(f"[{BIG}]") == [BIG]
    jsontext._fast_decoder.cache_clear()


def test_a_cli_run_without_msgspec_reads_traces_the_same(tmp_path: Path) -> None:
    trace = TESTS / "corpus" / "traces" / "abc-examples" / "valid_claim.json"
    code = (
        "import sys, json\n"
        "if sys.argv[1] == 'blocked': sys.modules['msgspec'] = None\n"
        "from canon.gates.contracts.otel import jsontext, normalize_trace, parse_trace_text\n"
        "e = normalize_trace(parse_trace_text(open(sys.argv[2]).read()))\n"
        "print(json.dumps([jsontext.json_parser().split()[0], e.step_names(), e.output_text]))\n"
    )
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code, mode, str(trace)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for mode in ("blocked", "installed")
    ]
    assert [run[0] for run in runs] == ["json", "msgspec"]
    assert runs[0][1:] == runs[1][1:] and runs[0][1]


@pytest.mark.parametrize("text", ['{"spans": [{"name": "a"}]}', "{", "[" * 5000 + "]" * 5000])
@pytest.mark.parametrize("collector_on", [True, False])
def test_the_collector_is_paused_for_the_parse_and_left_as_it_was(
    parser: str, text: str, collector_on: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    decide = jsontext._parse

    def watched(source: str) -> object:
        seen.append(gc.isenabled())
        return decide(source)

    monkeypatch.setattr(jsontext, "_parse", watched)
    was_on = gc.isenabled()
    (gc.enable if collector_on else gc.disable)()
    try:
        with contextlib.suppress(ValueError, RecursionError):  # bad JSON: still put back
            jsontext.loads(text)
        assert seen == [False]  # off while the parse ran
        assert gc.isenabled() is collector_on
    finally:
        (gc.enable if was_on else gc.disable)()

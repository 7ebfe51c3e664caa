"""The strict JSON decoder: what it accepts and every way it refuses input."""

from __future__ import annotations

import codecs

import pytest

from canon.gates.policy import PolicyError, decode_json_bytes, decode_json_text


def refuse(data: bytes) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        decode_json_bytes(data, what="policy")
    assert info.value.code == "INVALID_JSON_INPUT"
    return info.value


def nested(levels: int) -> bytes:
    return b'{"k":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"


def test_decoder_returns_plain_python_values() -> None:
    assert decode_json_bytes(b' {"a": [1, 2.5, true, null, "x"]}\n') == {
        "a": [1, 2.5, True, None, "x"]
    }


def test_duplicate_members_are_rejected() -> None:
    assert "duplicate" in refuse(b'{"a": 1, "a": 2}').message


def test_duplicate_members_count_after_unescaping() -> None:
    assert "duplicate" in refuse(b'{"a": 1, "\\u0061": 2}').message


def test_duplicate_members_in_nested_objects_are_rejected() -> None:
    refuse(b'{"outer": {"b": 1, "b": 1}}')


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_finite_tokens_are_rejected(token: bytes) -> None:
    assert "non-finite" in refuse(b'{"x": ' + token + b"}").message


def test_overflowing_float_literal_is_a_syntax_error() -> None:
    assert "non-finite" in refuse(b'{"x": 1e309}').message


def test_utf8_byte_order_mark_is_rejected_with_its_own_message() -> None:
    error = refuse(codecs.BOM_UTF8 + b"{}")
    assert "byte order mark" in error.message


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_wide_encodings_are_rejected(encoding: str) -> None:
    assert "UTF-16 or UTF-32" in refuse("{}".encode(encoding)).message


def test_invalid_utf8_is_rejected() -> None:
    assert "UTF-8" in refuse(b'{"a": "\xe9"}').message


def test_lone_surrogate_escape_is_rejected() -> None:
    assert "surrogate" in refuse(b'{"a": "\\ud800"}').message


def test_surrogate_pair_escape_is_accepted() -> None:
    assert decode_json_bytes(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": 1,}',
        b"{'a': 1}",
        b'{"a": 01}',
        b'{"a": 1} x',
        b'{"a": "\x01"}',
        b"// c\n{}",
        b"\x0c{}",
        b"",
    ],
)
def test_python_json_strictness_applies(text: bytes) -> None:
    assert "not valid JSON" in refuse(text).message


def test_integer_longer_than_cpython_limit_is_rejected() -> None:
    refuse(b'{"a": ' + b"1" * 5000 + b"}")


def test_input_of_exactly_the_limit_is_accepted_and_one_byte_more_is_not() -> None:
    padding = 1_000_000 - len(b'{"a":""}')
    exact = b'{"a":"' + b"x" * padding + b'"}'
    assert len(exact) == 1_000_000
    assert decode_json_bytes(exact)["a"] == "x" * padding
    assert "larger than" in refuse(exact + b" ").message


def test_depth_limit_counts_the_top_level_container() -> None:
    assert decode_json_bytes(nested(32))
    assert "structural limits" in refuse(nested(33)).message


def test_scalars_do_not_add_a_level() -> None:
    assert decode_json_bytes(b"[" * 32 + b"1" + b"]" * 32)


def test_very_deep_nesting_is_a_controlled_error() -> None:
    refuse(b"[" * 100_000 + b"]" * 100_000)


def test_node_limit_counts_every_value() -> None:
    at_limit = b"[" + b",".join([b"0"] * 99_999) + b"]"
    assert len(decode_json_bytes(at_limit)) == 99_999
    assert "100000 values" in refuse(b"[" + b",".join([b"0"] * 100_000) + b"]").message


def test_top_level_scalar_parses_and_is_left_to_the_consumer() -> None:
    assert decode_json_bytes(b"3") == 3


def test_text_decoding_applies_the_same_rules() -> None:
    assert decode_json_text('{"é": 1}') == {"é": 1}
    with pytest.raises(PolicyError):
        decode_json_text("\ufeff{}")

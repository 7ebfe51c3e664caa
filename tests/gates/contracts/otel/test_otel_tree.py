"""The top spans, found in a few passes, are the spans whose parent names no span."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from canon.gates.contracts.otel.tree import (
    nested_model_calls,
    repeated_tool_calls,
    root_position,
    top_positions,
)

ids = st.sampled_from(["", "a", "b", "c", "d"])


def _naive_tops(span_ids: list[str], parent_ids: list[str]) -> list[int]:
    known = {span_id for span_id in span_ids if span_id}
    return [at for at, parent in enumerate(parent_ids) if parent not in known]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(ids, ids, st.sampled_from(["t1", "t2", "chat"])), max_size=8))
def test_top_positions_and_the_root_agree_with_the_definition(
    spans: list[tuple[str, str, str]],
) -> None:
    span_ids = [span_id for span_id, _, _ in spans]
    parent_ids = [parent for _, parent, _ in spans]
    tops = top_positions(span_ids, parent_ids)
    assert tops == _naive_tops(span_ids, parent_ids)
    assert root_position(span_ids, parent_ids, tops) == root_position(span_ids, parent_ids)
    names = [name for _, _, name in spans]
    kinds = ["model_call" if name == "chat" else "tool_call" for name in names]
    spans_at = [(at, at + 1) for at in range(len(spans))]
    given_tops = repeated_tool_calls(names, kinds, span_ids, parent_ids, spans_at.__getitem__, tops)
    assert given_tops == repeated_tool_calls(
        names, kinds, span_ids, parent_ids, spans_at.__getitem__
    )


def test_one_tree_has_one_top_and_a_forest_several() -> None:
    assert top_positions(["r", "a", "b"], ["", "r", "r"]) == [0]
    assert top_positions(["r", "a", "s"], ["", "r", ""]) == [0, 2]
    assert top_positions(["a", "b"], ["lost", "a"]) == [0]  # a partial export: its parent lost
    assert top_positions(["a", "b"], ["b", "a"]) == []  # a cycle: no top, the first is the root
    assert root_position(["a", "b"], ["b", "a"]) == 0


def test_a_model_call_under_a_model_call_is_the_same_call() -> None:
    kinds = ["agent", "model_call", "model_call", "custom", "model_call", "model_call"]
    ids = ["a", "framework", "provider", "wrapper", "provider2", "separate"]
    # provider under framework (child), provider2 under it through a wrapper (grandchild)
    parents = ["", "a", "framework", "framework", "wrapper", "a"]
    assert nested_model_calls(kinds, ids, parents) == [2, 4]
    # two model calls side by side under the agent stay two
    assert nested_model_calls(kinds, ids, ["", "a", "a", "a", "a", "a"]) == []


def test_nested_model_calls_with_many_parents_read_the_same() -> None:
    # twenty agent turns, each a framework call holding a provider call: the indexed road
    kinds, ids, parents = ["agent"], ["root"], [""]
    for turn in range(20):
        kinds += ["agent", "model_call", "model_call"]
        ids += [f"turn{turn}", f"chat{turn}", f"openai{turn}"]
        parents += ["root", f"turn{turn}", f"chat{turn}"]
    assert nested_model_calls(kinds, ids, parents) == [3 + 3 * turn for turn in range(20)]

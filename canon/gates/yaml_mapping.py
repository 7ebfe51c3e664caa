"""YAML mappings that refuse a duplicate key: one constructor for every strict loader.

A second ``constraints:`` in a contract, or a repeated setting in canon.yaml, would otherwise
silently replace the first. The gates parse YAML themselves (contract text) and the store
reads YAML files; both register this constructor.
"""

from __future__ import annotations

from typing import Any

import yaml


def unique_key_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    """Construct a YAML mapping, refusing a key that appears twice."""
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

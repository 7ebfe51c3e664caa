"""Build the pre-judge gates a metric or config names: read files, return gate callables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from canon.check.runner import ArtifactGate
from canon.core.artifact import Artifact
from canon.core.gate_outcome import GateOutcome
from canon.errors import GateError
from canon.project.store import read_bytes

PolicySpec = Any  # a Policy, a policy mapping, or the path of a policy JSON file
ContractSpec = Any  # a Contract, a contract mapping, a YAML path, or a bundled template name


def policy_gate(spec: PolicySpec) -> ArtifactGate:
    """A gate that checks each artifact's structured response against a JSON policy."""
    from canon.gates.policy import (
        MAX_INPUT_BYTES,
        Policy,
        PolicyError,
        decode_json_bytes,
        policy_outcome,
        validate_policy,
    )

    if isinstance(spec, Policy):
        policy = spec
    elif isinstance(spec, str | os.PathLike):
        path = Path(spec)
        # A regular file within the policy gate's own size limit, never a FIFO or device.
        data = read_bytes(path, "policy file", GateError, limit=MAX_INPUT_BYTES)
        try:
            policy = validate_policy(decode_json_bytes(data, what="policy"))
        except PolicyError as exc:
            raise GateError(f"{path}: {exc.message}") from None
    elif isinstance(spec, Mapping):
        policy = validate_policy(dict(spec))
    else:
        raise GateError(
            f"policy must be a Policy, a mapping or a JSON file path, got a {type(spec).__name__}"
        )

    def check(artifact: Artifact) -> GateOutcome:
        if artifact.response is None:
            return GateOutcome("policy", "skip", ("the artifact has no structured response",))
        return policy_outcome(policy, artifact.response)

    return check


def contract_gate(spec: ContractSpec) -> ArtifactGate:
    """A gate that checks each artifact's trace against a behavioral contract."""
    from canon.gates.contracts import TEMPLATE_NAMES, Contract, contract_outcome, load_contract
    from canon.project.contract_files import load_contract_file

    if isinstance(spec, Contract):
        contract = spec
    elif isinstance(spec, str | os.PathLike):
        contract = load_contract_file(os.fspath(spec))
    elif isinstance(spec, Mapping):
        contract = load_contract(spec)
    else:
        raise GateError(
            "contract must be a Contract, a mapping, a YAML file path or a template name "
            f"({', '.join(TEMPLATE_NAMES)}), got a {type(spec).__name__}"
        )

    def check(artifact: Artifact) -> GateOutcome:
        if artifact.trace is None:
            return GateOutcome("contract", "skip", ("the artifact has no trace",))
        return contract_outcome(contract, _parsed_trace(artifact.trace))

    return check


def _parsed_trace(trace: Any) -> Any:
    # A suite names trace files; a test may hand over a path, JSON text or parsed JSON.
    from canon.gates.contracts import normalize_trace_text

    if isinstance(trace, os.PathLike):
        from canon.project.contract_files import read_trace

        return read_trace(Path(trace))  # normalized here, so its errors name the file
    if isinstance(trace, str):
        return normalize_trace_text(trace)  # as a file's text is read
    return trace

"""The one module that imports litellm, and what the judge asks of litellm's model tables.

litellm is imported on the first question, not on import, because it takes seconds to load
and ``canon --help`` or a MockJudge run must not pay for it.

What litellm knows about a model (its provider, whether it can be priced, whether it takes a
JSON schema) is asked once per model and kept (``model_facts``): litellm's lookups cost
milliseconds each, and a run at width asks thousands of questions of one model. (Prices and
context windows for the direct path, which never imports litellm, are read from the table
litellm ships: canon.judge.usage.)
"""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass
from typing import Any

from canon.errors import ConfigError

PIP_LINE = 'pip install "litellm>=1.40"'


class JudgeSetupError(ConfigError):
    """The model judge cannot be set up here (litellm missing, or an unknown provider)."""


_litellm_module: Any = None

# Set before litellm is imported: it reads them at import and on the first call. Each keeps
# litellm from fetching a file of its own choosing from the internet at run time: the price
# list, and (for anthropic: judges) the beta-headers config it otherwise downloads on every
# run. LITELLM_OFFLINE_MODE covers what newer releases fetch (tokenizers, blog posts).
# ``setdefault``: a user who wants litellm's live files can still set them to False.
OFFLINE_SWITCHES = (
    "LITELLM_LOCAL_MODEL_COST_MAP",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS",
    "LITELLM_OFFLINE_MODE",
)


def load_litellm() -> Any:
    """Import litellm once, offline-safe and quiet; explain how to install it if missing."""
    global _litellm_module
    if _litellm_module is None:
        for switch in OFFLINE_SWITCHES:
            os.environ.setdefault(switch, "True")
        try:
            module: Any = importlib.import_module("litellm")
        except ImportError as exc:
            raise JudgeSetupError(
                f"model judges need litellm, which is not installed ({exc}); run: {PIP_LINE}"
            ) from exc
        module.suppress_debug_info = True  # no "Give Feedback" banners in CI logs
        _litellm_module = module
    return _litellm_module


def provider_error() -> type[BaseException]:
    """The base class of every error litellm maps from a provider.

    It is the OpenAI SDK's ``OpenAIError`` (litellm depends on that SDK); litellm's own
    ``exceptions.OpenAIError`` is an unrelated class of the same name.
    """
    base: type[BaseException] = importlib.import_module("openai").OpenAIError
    return base


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What litellm's tables say about one model, looked up once."""

    provider: str | None  # litellm's provider name (``anthropic``), None when unknown
    priced: bool  # the price table has the model's per-token prices
    supports_schema: bool  # it takes ``response_format`` with a JSON schema
    supports_logprobs: bool  # it returns the answer's log-probabilities (``logprobs``)
    supports_n: bool  # one request gives several answers (``n``), billed for one prompt


@functools.lru_cache(maxsize=64)
def model_facts(model: str) -> ModelFacts:
    """litellm's answers about ``model``, asked on the first call and kept for the process."""
    litellm = load_litellm()
    try:
        provider: str | None = str(litellm.get_llm_provider(model=model)[1])
    except Exception:  # an unknown provider: refused elsewhere (LiteLLMJudge._check_provider)
        provider = None
    try:
        info = dict(litellm.get_model_info(model=model) or {})
    except Exception:  # litellm raises a plain Exception for an unmapped model
        info = {}
    try:
        schema = bool(litellm.supports_response_schema(model=model))
    except Exception:  # unknown to litellm's model list: ask in text
        schema = False
    try:
        params = litellm.get_supported_openai_params(model=model) or ()
        logprobs = "logprobs" in params and "top_logprobs" in params
        several = "n" in params
    except Exception:  # unknown to litellm: ask for no more than a plain answer
        logprobs = several = False
    return ModelFacts(
        provider=provider,
        priced=info.get("input_cost_per_token") is not None,
        supports_schema=schema,
        supports_logprobs=logprobs,
        supports_n=several,
    )


def supports_schema(model: str) -> bool:
    """Whether ``model`` takes a JSON schema as its ``response_format`` (looked up once)."""
    return model_facts(model).supports_schema


def supports_logprobs(model: str) -> bool:
    """Whether litellm passes ``logprobs`` and ``top_logprobs`` to ``model``'s provider
    (looked up once)."""
    return model_facts(model).supports_logprobs


def supports_n(model: str) -> bool:
    """Whether litellm passes ``n`` to ``model``'s provider: several answers for one prompt
    (looked up once); without it each further sample is a request of its own."""
    return model_facts(model).supports_n


def missing_api_keys(litellm: Any, model: str) -> list[str]:
    """The unset ``*_API_KEY`` variables a hosted model needs, checked before any call.

    Only API keys: other names litellm lists can be supplied otherwise (Ollama's default
    address, AWS and Google credentials from their own config, Azure AD tokens), and refusing
    those up front would stop judges that work.
    """
    if model.split("/", 1)[0] in ("azure", "azure_ai"):
        return []
    return [name for name in missing_keys(litellm, model) if name.endswith("_API_KEY")]


def missing_keys(litellm: Any, model: str) -> list[str]:
    try:
        return list(litellm.validate_environment(model=model).get("missing_keys") or [])
    except Exception:  # advice only; the first call will tell
        return []


def connection_error() -> type[BaseException]:
    base: type[BaseException] = importlib.import_module("openai").APIConnectionError
    return base

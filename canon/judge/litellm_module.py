"""The one module that imports litellm, and what the judge asks of litellm's model tables.

litellm is imported on the first question, not on import, because it takes seconds to load
and ``canon --help`` or a MockJudge run must not pay for it.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from canon.errors import ConfigError

PIP_LINE = 'pip install "litellm>=1.40"'


class JudgeSetupError(ConfigError):
    """The model judge cannot be set up here (litellm missing, or an unknown provider)."""


_litellm_module: Any = None


def load_litellm() -> Any:
    """Import litellm once, offline-safe and quiet; explain how to install it if missing."""
    global _litellm_module
    if _litellm_module is None:
        # Without this, importing litellm tries to download a price list from the internet.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
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


def supports_schema(litellm: Any, model: str) -> bool:
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:  # unknown to litellm's model list: ask in text
        return False


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

"""Canon's pytest plugin: fixtures that build a CoherenceMetric from the project's config.

Registered through the ``pytest11`` entry point, so it loads in every pytest run where
Canon is installed; it therefore imports nothing heavy until a fixture is used.

A config or judge setting that cannot work makes the fixture raise its ``CanonError``, so
the tests that use it are errors (not failures) naming the file and the problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from canon.config import Config
    from canon.core.constitution import Constitution
    from canon.metric import CoherenceMetric


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add Canon's command-line options."""
    group = parser.getgroup("canon", "Canon coherence tests")
    group.addoption(
        "--canon-config",
        action="store",
        default=None,
        metavar="FILE",
        help="canon.yaml (or pyproject.toml) for the canon_* fixtures; default: search upward.",
    )
    group.addoption(
        "--canon-no-cache",
        action="store_true",
        default=False,
        help="canon_metric asks the model judge every question anew (no answer cache).",
    )


@pytest.fixture(scope="session")
def canon_config(request: pytest.FixtureRequest) -> Config:
    """The project's Canon config (its .env files loaded), as ``canon score`` would read it."""
    from canon.config import load_config, load_env_files

    explicit = request.config.getoption("--canon-config")
    config = load_config(Path(explicit) if explicit else None)
    load_env_files(config.source.parent if config.source else config.base_dir)
    return config


@pytest.fixture(scope="session")
def canon_constitution(canon_config: Config) -> Constitution:
    """The constitution named by ``constitution_path``."""
    from canon.errors import ConfigError
    from canon.store import constitution_from_file

    if canon_config.constitution_path is None:
        raise ConfigError(
            f"{canon_config.source or 'no canon.yaml found'}: set 'constitution_path'"
        )
    return constitution_from_file(canon_config.constitution_path)


@pytest.fixture(scope="session")
def canon_metric(
    request: pytest.FixtureRequest, canon_config: Config, canon_constitution: Constitution
) -> CoherenceMetric:
    """A CoherenceMetric with the config's judge (and answer cache), threshold and gates."""
    from canon.errors import ConfigError
    from canon.judge.cache import cached_judge
    from canon.judge.factory import judge_from_spec
    from canon.metric import CoherenceMetric

    if canon_config.judge_model is None:
        raise ConfigError(f"{canon_config.source or 'no canon.yaml found'}: set 'judge_model'")
    cache = None if request.config.getoption("--canon-no-cache") else canon_config.judge_cache
    judge = judge_from_spec(
        canon_config.judge_model,
        base_dir=canon_config.base_dir,
        options=canon_config.judge_options,
    )
    return CoherenceMetric(
        constitution=canon_constitution,
        judge=cached_judge(judge, cache),
        threshold=canon_config.threshold,
        policy=canon_config.policy,
        contract=canon_config.contract,
    )

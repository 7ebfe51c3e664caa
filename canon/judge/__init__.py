"""Judges: the Judge protocol, MockJudge, the litellm and direct HTTP paths, the answer cache,
batch mode and concurrency.

Layer: judge (network, the cache file). Imports canon.errors and canon.core; never project,
check, report or an interface.
"""

"""Helpers the tests share; pytest's ``pythonpath`` (pyproject.toml) makes them importable."""

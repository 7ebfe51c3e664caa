"""Renderings of results: text for people, JSON for machines, JUnit XML for CI, HTML to browse.

Layer: report (values in, text out; no printing). Imports errors, core and check (the plan and
the run's usage); never an interface.
"""

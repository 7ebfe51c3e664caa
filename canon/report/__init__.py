"""Renderings of results: text for people, JSON for machines, JUnit XML for CI, HTML to browse."""

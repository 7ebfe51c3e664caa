"""Renderings of results: text for people, JSON for machines."""

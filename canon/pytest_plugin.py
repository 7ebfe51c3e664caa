"""Canon's pytest plugin (fixtures and options arrive with the baselines work)."""

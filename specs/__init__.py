"""Data files: the scenario JSON Schema, explorer configs, scenarios, sample traces and logs."""

"""Scenarios run on the reference, other implementations driven through an adapter, and the generated suites."""

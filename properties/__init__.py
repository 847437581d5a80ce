"""The named invariants, each a function with its rule in words, read by every engine."""

"""The bug switches a configuration may carry (`ClusterConfig.variants`): the names the model reads.

Each switch reverts one of Kafka's fixes at the one place the model holds it (`config.has(NAME)` there). What
each bug is (title, Kafka versions, the properties it breaks) is catalogued with the bug-rediscovery checks, not
here: the model reads only the names.
"""

from __future__ import annotations

# Kafka's bugs that need a switch of their own (the others are settings the model already has: the truncation
# rule, unclean election).
SWITCHES = ("KAFKA-7128", "KAFKA-6082", "KAFKA-1120", "KAFKA-8152", "KAFKA-4214", "KAFKA-9478", "KAFKA-2729",
            "KAFKA-12315", "KAFKA-2937", "KAFKA-6650", "KAFKA-3083",
            "KAFKA-9307", "KAFKA-1305")
# Deliberate bugs with no Kafka release behind them, for the mutation suite.
MUTANT_SWITCHES = ("no-zkversion-check", "no-broker-epoch-check")


def known_switch(name: str) -> bool:
    """Whether `name` may appear in a config's `variants` list."""
    return name in SWITCHES or name in MUTANT_SWITCHES

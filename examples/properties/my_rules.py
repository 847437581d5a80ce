"""Properties of one's own for `kcm explore --property`: plain functions over the result document of `kcm run`.

    kcm explore --config controller --property examples/properties/my_rules.py:leader_is_live \
        --property examples/properties/my_rules.py:leader_epoch_at_most_2 \
        --property examples/properties/my_rules.py:leader_epochs_never_go_back

A function of one parameter judges every state; one of three (before, action, after) judges every step. Each
returns True while its rule holds. A state is read-only: mappings cannot be changed, lists are tuples.
This file imports nothing of kcm: kcm sends its text to the processes that judge it (Spark executors too).
"""

from collections.abc import Mapping
from typing import Any

State = Mapping[str, Any]  # the result document of `kcm run`, read-only


def leader_is_live(state: State) -> bool:
    """Every partition's leader is a live broker (or there is none: leader -1)."""
    live = state["live_brokers"]
    return all(p["leader"] == -1 or p["leader"] in live for p in state["partitions"].values())


def leader_epoch_at_most_2(state: State) -> bool:
    """No partition's leader epoch exceeds 2 (false on `controller`: a few failovers take it to 3)."""
    return all(p["leader_epoch"] <= 2 for p in state["partitions"].values())


leader_epoch_at_most_2.name = "LeaderEpochAtMost2"  # the property's id; without it, the function's name


def leader_epochs_never_go_back(before: State, action: State, after: State) -> bool:
    """No step lowers a partition's leader epoch (while the partition exists)."""
    for name, old in before["partitions"].items():
        new = after["partitions"].get(name)
        if new is not None and new["leader_epoch"] < old["leader_epoch"]:
            return False
    return True

"""The reference controller under Hypothesis: every contract op, every controller invariant after every step.

The machine draws contract ops with arguments from the config and checks every ALWAYS and STEP property
of kcm.properties after each step (at most one leader per partition and leader epoch, epochs never go
back, leader in ISR in AR, controller-epoch fencing, AR shrinks last, moves of the active table,
deletion states); a refused op must change nothing. A failure is shrunk and printed as a `kcm run`
scenario. The profile comes from KCM_HYPOTHESIS_PROFILE ("ci", the default, or "thorough").
"""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test
from kcm.checkers.gate import hypothesis_machine as hm
from kcm.model.cluster import ClusterConfig
from kcm.properties.catalogue import CATALOGUE

api = pytest.importorskip("kcm.reference.api", reason="the reference controller (kcm.reference.api) has not landed")

PROFILE, SETTINGS = hm.profile_settings()
CONTROLLER_INVARIANTS = {
    "LeaderInIsrInAr", "OneLeaderPerEpoch", "LeaderEpochMonotone", "ControllerEpochMonotone", "EpochFencing",
    "ReassignmentArIsUnion", "ArShrinksLast", "ValidTransition", "DeletionStatesOnlyWhileDeleting",
    "DeletedTopicsLeaveNothing",
}
CONFIGS = {
    "seeds": ClusterConfig((0, 1, 2)),
    "kafka-minisr2": ClusterConfig((0, 1, 2), rules="kafka", min_insync_replicas=2),
}


def reference_model(config: ClusterConfig) -> hm.ContractModel:
    """The reference controller as a Model, with every named property of kcm.properties."""
    return hm.ContractModel(config, api.start, api.step, list(CATALOGUE))


def test_the_controller_invariants_are_checked():
    checked = {p.name for p in reference_model(CONFIGS["seeds"]).properties() if p.expectation in ("always", "step")}
    assert CONTROLLER_INVARIANTS <= checked


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_reference_keeps_every_invariant(name, tmp_path):
    reached: set[str] = set()
    machine = hm.build_machine(reference_model(CONFIGS[name]), name=f"Reference_{name}", contract_ops=True,
                               scenario_dir=str(tmp_path), reached=reached)
    run_state_machine_as_test(machine, settings=SETTINGS)
    # The op generator must reach the interesting corners, or the invariants were checked on trivia.
    assert {"SomeLeaderMoved", "SomePartitionOffline", "SomeControllerFailover"} <= reached, reached

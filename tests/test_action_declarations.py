"""Every action declares which of its fields name brokers (BROKER_FIELDS), and symmetry renames from that alone."""

from __future__ import annotations

from typing import NamedTuple

from kcm.model import actions as A
from kcm.model.symmetry import rename_action

ACTIONS = {**A.CONTRACT_OPS, **A.EXTENSION_OPS}
KINDS = {A.BROKER, A.BROKER_LIST, A.ASSIGNMENT, A.REPLICA_LIST}


def test_every_action_declares_its_broker_fields() -> None:
    for cls in ACTIONS.values():
        assert "BROKER_FIELDS" in vars(cls), cls.__name__  # said in the class itself, not inherited by accident
        declared = dict(cls.BROKER_FIELDS)
        assert set(declared) <= set(cls._fields) and set(declared.values()) <= KINDS, cls.__name__
        # A field that names brokers by Kafka's words must be declared (else symmetry would leave it alone).
        assert {f for f in cls._fields if f in ("broker", "replicas", "assignment")} <= set(declared), cls.__name__


def test_a_new_action_is_renamed_from_its_declaration_alone() -> None:
    class MoveLeadership(NamedTuple):
        """A toy operation naming a broker and an ordered replica list."""

        tp: tuple
        to: int
        order: tuple[int, ...]
        BROKER_FIELDS = (("to", A.BROKER), ("order", A.BROKER_LIST))

    swap = {1: 2, 2: 1}
    assert rename_action(swap, MoveLeadership(("t", 0), 1, (2, 1, 3))) == MoveLeadership(("t", 0), 2, (1, 2, 3))
    assert rename_action(swap, A.Deliver(1, 4)) == A.Deliver(2, 4)
    assert rename_action(swap, A.ReplicaTransition(((("t", 0), 2),), "OfflineReplica")) == A.ReplicaTransition(
        ((("t", 0), 1),), "OfflineReplica")
    assert rename_action(swap, A.DeleteTopic("t")) == A.DeleteTopic("t")

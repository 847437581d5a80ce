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


def test_a_toy_operation_added_in_its_action_and_its_handler_alone_runs_end_to_end() -> None:
    """What docs/adding-an-operation.md describes: the action class, its handler, and nothing else in Python."""
    from kcm.model.cluster import ClusterConfig
    from kcm.model.errors import BrokerNotAvailable, KcmError
    from kcm.reference import api
    from kcm.reference.handlers import HANDLERS, handles

    @A.operation("ping_broker", extension=True)
    class PingBroker(NamedTuple):
        """The controller checks that a broker is registered (a toy operation)."""

        broker: int
        BROKER_FIELDS = (("broker", A.BROKER),)

        @classmethod
        def from_step(cls, step: dict) -> PingBroker:
            return cls(int(step["broker"]))

        def to_step(self) -> dict:
            return {"op": "ping_broker", "broker": self.broker}

    try:
        @handles(PingBroker)
        def ping_broker(t, a: PingBroker) -> None:
            if a.broker not in t.zk.brokers:
                raise BrokerNotAvailable(f"broker {a.broker} is not registered")
            t.note(f"broker {a.broker} answered")

        config = ClusterConfig((0, 1, 2))
        state, _ = api.start(config)
        action = A.from_step({"op": "ping_broker", "broker": 1})
        assert action == PingBroker(1) and action.to_step() == {"op": "ping_broker", "broker": 1}
        after, effects = api.step(config, state, action)
        assert after == state and effects.notes == ("broker 1 answered",)
        try:
            api.step(config, state, PingBroker(7))
            raise AssertionError("an unregistered broker must be refused")
        except KcmError as err:
            assert "broker 7" in str(err)
        assert rename_action({1: 2, 2: 1}, action) == PingBroker(2)
    finally:
        A.EXTENSION_OPS.pop("ping_broker", None)
        HANDLERS.pop(PingBroker, None)


def test_every_action_has_a_handler() -> None:
    from kcm.reference.api import HANDLERS

    assert set(ACTIONS.values()) <= set(HANDLERS)

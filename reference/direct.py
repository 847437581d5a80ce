"""Direct calls of the two state machines (the contract's partition_transition and replica_transition)."""

from __future__ import annotations

from kcm.model.actions import PartitionTransition, ReplicaTransition
from kcm.model.errors import BrokerNotAvailable, UnknownTopicOrPartition
from kcm.model.names import replica_name, tp_name
from kcm.model.states import PartitionState as P
from kcm.model.states import ReplicaState as R
from kcm.model.txn import Txn
from kcm.reference import selectors
from kcm.reference.context import has_controller
from kcm.reference.handlers import handles
from kcm.reference.partition_machine import handle_partition_changes
from kcm.reference.replica_machine import handle_replica_changes


def _require_partition(t: Txn, tp: tuple) -> None:
    if tp not in t.zk.assignments:
        raise UnknownTopicOrPartition(f"partition {tp_name(tp)} does not exist")
    if not has_controller(t):
        raise BrokerNotAvailable("no controller is active to run the state machine")


@handles(PartitionTransition)
def partition_transition(t: Txn, a: PartitionTransition) -> None:
    """One handleStateChanges call: every move checked, the first illegal one refuses the whole step."""
    if a.selector is not None and a.selector not in selectors.NAMES:
        raise ValueError(f"unknown selector {a.selector!r}; known: {', '.join(selectors.NAMES)}")
    if a.target not in P.ALL:
        raise ValueError(f"unknown partition state {a.target!r}")
    for tp in a.tps:
        _require_partition(t, tp)
    handle_partition_changes(t, a.tps, a.target, a.selector, strict=True)


@handles(ReplicaTransition)
def replica_transition(t: Txn, a: ReplicaTransition) -> None:
    """One handleStateChanges call of the replica machine, all or nothing, judged by the table alone.

    As Kafka's ZkReplicaStateMachine.doHandleStateChanges, only validPreviousStates is checked: a move into a
    deletion state is made whether or not the topic is queued for deletion (Kafka's own reassignment moves
    dropped replicas through them too).
    """
    if a.target not in R.ALL:
        raise ValueError(f"unknown replica state {a.target!r}")
    for tp, b in a.replicas:
        _require_partition(t, tp)
        if b not in t.brokers:
            raise BrokerNotAvailable(f"broker {b} of {replica_name(tp, b)} is not registered")
    handle_replica_changes(t, a.replicas, a.target, strict=True)

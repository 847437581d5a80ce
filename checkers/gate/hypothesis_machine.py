"""Hypothesis state machines built from a Model: its actions are the rules, its properties the invariants.

`build_machine(model)` returns a RuleBasedStateMachine class. Its rules are generated, never listed by
hand: one rule draws any action the model enables (`model.actions(state)`), and with `contract_ops=True`
one more rule per op of the scenario contract (`model.actions.CONTRACT_OPS`) draws that op's arguments
from strategies derived from the model's config. After every step the machine checks every ALWAYS
property on the new state and every STEP property on the transition; a refused step (a KcmError) must
leave the state exactly as it was. A failure carries the op sequence as a `kcm run` scenario, so the
shrunk counterexample Hypothesis prints is a file that replays it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from kcm.checkers.core import evidence
from kcm.model.actions import CONTRACT_OPS, CreateTopic, PartitionTransition, ReplicaTransition
from kcm.model.cluster import NO_CONTROLLER, ClusterConfig
from kcm.model.errors import KcmError
from kcm.model.fingerprint import fingerprint
from kcm.model.interface import ALWAYS, SOMETIMES, SOMETIMES_STEP, STEP, Model, ModelBase, Property
from kcm.model.states import PartitionState, ReplicaState

PROFILE_ENV = "KCM_HYPOTHESIS_PROFILE"
PROFILES: dict[str, dict[str, Any]] = {
    # CI: deterministic (derandomize), small; every run of the suite tries the same sequences.
    "ci": {"max_examples": 60, "stateful_step_count": 30},
    # Thorough: for a developer before a release, or a nightly job.
    "thorough": {"max_examples": 1000, "stateful_step_count": 80},
}
SELECTORS = ("offline", "reassigned", "preferred", "controlled_shutdown")
DEFAULT_TOPICS = ("t", "u")
DEFAULT_PARTITIONS = 2


def register_profiles() -> None:
    """Register the "ci" and "thorough" Hypothesis profiles (idempotent)."""
    for name, values in PROFILES.items():
        settings.register_profile(
            name,
            deadline=None,
            derandomize=(name == "ci"),
            database=None,
            print_blob=False,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            **values,
        )


def profile_settings() -> tuple[str, settings]:
    """The profile named by KCM_HYPOTHESIS_PROFILE (default "ci") and its settings; ValueError names the known ones.

    The settings are returned, not loaded, so other Hypothesis tests in the process keep their own.
    """
    register_profiles()
    name = os.environ.get(PROFILE_ENV, "ci")
    if name not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}={name!r} is not a profile; known: {', '.join(PROFILES)}")
    return name, settings.get_profile(name)


# -- scenarios --------------------------------------------------------------------------------

def contract_config(config: ClusterConfig) -> dict[str, Any]:
    """The `config` object of a `kcm run` scenario for a ClusterConfig."""
    out: dict[str, Any] = {"brokers": sorted(config.brokers)}
    if config.first_controller != NO_CONTROLLER:
        out["controller"] = config.first_controller
    out["unclean_leader_election"] = config.unclean_leader_election
    out["min_insync_replicas"] = config.min_insync_replicas
    out["rules"] = config.rules
    out["truncation"] = config.truncation
    return out


def scenario_document(config: ClusterConfig, trace: Sequence[tuple[Any, str | None]], name: str) -> dict[str, Any]:
    """A `kcm run` scenario replaying a trace of (action, refusal error name or None)."""
    steps = []
    for action, error in trace:
        step = action.to_step()
        if error is not None:
            step["expect_error"] = error
        steps.append(step)
    return {"name": name, "config": contract_config(config), "steps": steps}


def write_scenario(doc: dict[str, Any], directory: str | None = None, stem: str | None = None) -> str:
    """Write a scenario under a temp dir and return its path (named by stem, else by its content)."""
    folder = directory or os.path.join(tempfile.gettempdir(), "kcm-hypothesis")
    os.makedirs(folder, exist_ok=True)
    text = json.dumps(doc, indent=2)
    path = os.path.join(folder, f"failure-{stem or format(fingerprint(text), '016x')}.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return path


class PropertyViolation(AssertionError):
    """A property or the refusal rule failed; the message holds the replayable scenario."""

    def __init__(self, message: str, prop: str | None = None, evidence: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.prop = prop  # the property's name; None when the refusal rule or next_state broke
        self.evidence = evidence  # checkers.evidence of the accepted steps, when the model replays from one state


# -- argument strategies of the contract ops, derived from the config --------------------------

def _broker_lists(brokers: tuple[int, ...], max_size: int = 3) -> st.SearchStrategy:
    return st.lists(st.sampled_from(brokers), min_size=1, max_size=min(max_size, len(brokers)),
                    unique=True).map(tuple)


def field_strategies(config: ClusterConfig, topics: Sequence[str], partitions: int
                     ) -> Callable[[type, str], st.SearchStrategy | None]:
    """A function (action class, field name) -> strategy for that argument under this config."""
    brokers = tuple(sorted(config.brokers))
    tps = st.tuples(st.sampled_from(tuple(topics)), st.integers(0, partitions - 1))
    assignment = st.dictionaries(st.integers(0, partitions - 1), _broker_lists(brokers), min_size=1,
                                 max_size=partitions).map(lambda d: tuple(sorted(d.items())))
    by_field: dict[str, st.SearchStrategy] = {
        "topic": st.sampled_from(tuple(topics)),
        "assignment": assignment,
        "broker": st.sampled_from(brokers),
        "tp": tps,
        "tps": st.lists(tps, min_size=1, max_size=2, unique=True).map(tuple),
        "records": st.integers(1, 2),
        "acks": st.sampled_from(("all", "1")),
        "offset": st.integers(0, 3),
        "expect_records": st.just(-1),
        "selector": st.none() | st.sampled_from(SELECTORS),
    }
    # Fields whose meaning depends on the op: same name, different argument.
    by_op: dict[tuple[str, str], st.SearchStrategy] = {
        ("ControllerResign", "broker"): st.just(-1) | st.sampled_from(brokers),
        ("Reassign", "replicas"): _broker_lists(brokers),
        ("PreferredElection", "tps"): st.none() | by_field["tps"],
        ("PartitionTransition", "target"): st.sampled_from(PartitionState.ALL),
        ("ReplicaTransition", "target"): st.sampled_from(ReplicaState.ALL),
        ("ReplicaTransition", "replicas"): st.lists(st.tuples(tps, st.sampled_from(brokers)), min_size=1,
                                                    max_size=2, unique=True).map(tuple),
    }

    def strategy(cls: type, field: str) -> st.SearchStrategy | None:
        return by_op.get((cls.__name__, field), by_field.get(field))

    return strategy


def op_strategy(cls: type, config: ClusterConfig, topics: Sequence[str] = DEFAULT_TOPICS,
                partitions: int = DEFAULT_PARTITIONS) -> st.SearchStrategy:
    """Actions of one contract op with every argument drawn from the config's brokers and the topics."""
    fields = field_strategies(config, topics, partitions)
    if cls is CreateTopic:
        # The contract's two forms: an explicit assignment, or partitions x replication factor.
        explicit = st.builds(CreateTopic, fields(cls, "topic"), fields(cls, "assignment"), st.just(0), st.just(0))
        placed = st.builds(CreateTopic, fields(cls, "topic"), st.just(()), st.integers(1, partitions),
                           st.integers(1, min(3, len(config.brokers))))
        return explicit | placed
    kwargs = {}
    for name in cls._fields:
        s = fields(cls, name)
        if s is None:
            if name not in cls._field_defaults:
                raise ValueError(f"no strategy for argument {name!r} of {cls.__name__}")
            s = st.just(cls._field_defaults[name])  # else builds() would infer one from the type hint
        kwargs[name] = s
    return st.builds(cls, **kwargs)


# -- a Model from an implementation's start/step pair ---------------------------------------

class ContractModel(ModelBase):
    """A Model over an implementation with the reference API's shape: start(config), step(config, state, action).

    Both return (state, effects); step raises a KcmError when it refuses.

    It offers no actions of its own: a machine built with `contract_ops=True` draws every op of the contract.
    """

    def __init__(self, config: ClusterConfig, start: Callable[[ClusterConfig], tuple[Any, Any]],
                 step: Callable[[ClusterConfig, Any, Any], tuple[Any, Any]], properties: Sequence[Property]) -> None:
        self.config = config
        self._start = start
        self._step = step
        self._properties = list(properties)

    def init_states(self) -> list[Any]:
        """The state the implementation starts from under this config (start returns state and effects)."""
        return [self._start(self.config)[0]]

    def actions(self, state: Any) -> list[Any]:
        """None: the contract-op rules draw the actions."""
        return []

    def step(self, state: Any, action: Any) -> tuple[Any, Any]:
        """One step of the implementation."""
        return self._step(self.config, state, action)

    def next_state(self, state: Any, action: Any) -> Any | None:
        """The next state, or None when the step is refused or changes nothing."""
        try:
            after, _ = self._step(self.config, state, action)
        except KcmError:
            return None
        return None if after == state else after

    def properties(self) -> list[Property]:
        """The properties checked after every step."""
        return self._properties

    def within_boundary(self, state: Any) -> bool:
        """No boundary: the machine's step count bounds a run."""
        return True

    def fingerprint(self, state: Any) -> int:
        """The state's stable fingerprint."""
        return fingerprint(state)


def outside_controller_paths(state: Any, action: Any) -> bool:
    """Whether a direct state-machine call does what no controller operation does (a step the properties skip).

    Two kinds, both found by the thorough profile, both behaving as Kafka would:
    - a call on a topic queued for deletion (only the deletion manager moves those): it can send a LeaderAndIsr
      to a broker whose replica was already deleted, which re-creates it, keeps it once the deletion completes
      and ignores a re-created topic's leader epoch 0;
    - OfflineReplica (or a deletion state) for a replica of a live broker that is not shutting down: the broker
      gets a StopReplica and keeps its leader epoch, so a later LeaderAndIsr in that same epoch (a new
      controller's) is ignored and the replica stays stopped;
    - a deletion state for a replica of a topic not queued for deletion: the table allows it (Kafka checks only
      validPreviousStates), but DeletionStatesOnlyWhileDeleting judges the moves the controller makes on its
      own, and only a reassignment's last step passes such a topic's replicas through them (within one step).
    """
    zk = getattr(state, "zk", None)
    deleting = set(getattr(zk, "delete_topics", ()))
    if isinstance(action, PartitionTransition):
        return any(tp[0] in deleting for tp in action.tps)
    if isinstance(action, ReplicaTransition):
        if any(tp[0] in deleting for tp, _ in action.replicas):
            return True
        if action.target in ReplicaState.DELETION:
            return True  # the topic is not queued (above): a deletion state outside topic deletion
        if action.target in (ReplicaState.ONLINE, ReplicaState.NEW):
            return False
        brokers = dict(getattr(state, "brokers", ()))
        return any(b in brokers and brokers[b].alive and not brokers[b].shutting_down for _, b in action.replicas)
    return False


# -- the machine ------------------------------------------------------------------------------

def _check_state(model: Model, props: Sequence[Property], state: Any) -> Property | None:
    for p in props:
        if not p.condition(model, state):
            return p
    return None


def _check_step(model: Model, props: Sequence[Property], before: Any, action: Any, after: Any, effects: Any
                ) -> Property | None:
    for p in props:
        if not p.condition(model, before, action, after, effects):
            return p
    return None


def build_machine(model: Model, *, name: str = "ModelMachine", contract_ops: bool = False,
                  topics: Sequence[str] = DEFAULT_TOPICS, partitions: int = DEFAULT_PARTITIONS,
                  scenario_dir: str | None = None, reached: set[str] | None = None) -> type[RuleBasedStateMachine]:
    """A RuleBasedStateMachine over a Model (with `.config`): its actions as rules, its properties as invariants.

    `contract_ops` adds one rule per contract op (arguments from the config), so ops the model's own
    `actions()` would not offer in a state, including ones it must refuse, are tried too. `reached`, if
    given, collects the names of SOMETIMES / SOMETIMES_STEP properties some run satisfied.
    """
    props = list(model.properties())
    always = [p for p in props if p.expectation == ALWAYS]
    steps = [p for p in props if p.expectation == STEP]
    sometimes = [p for p in props if p.expectation == SOMETIMES]
    sometimes_step = [p for p in props if p.expectation == SOMETIMES_STEP]
    config: ClusterConfig = model.config
    init_states = list(model.init_states())
    if not init_states:
        raise ValueError(f"{name}: the model has no initial state")

    def fail(self: Any, why: str, prop: Property | None = None) -> None:
        if prop is not None:
            why = f"{why} breaks {prop.name} ({prop.rule})"
        doc = scenario_document(config, self.trace, f"{name}: {why}")
        # One file per machine, overwritten by each failing attempt: the last one written is the shrunk one.
        path = write_scenario(doc, scenario_dir, f"{name}-{os.getpid()}")
        found = _evidence(prop, [a for a, refused in self.trace if refused is None])
        witness = "" if not found or not found["witness"]["entries"] else (
            "witness: " + "; ".join(e["what"] for e in found["witness"]["entries"]) + "\n")
        raise PropertyViolation(f"{why}\n{witness}replay with: kcm run {path}\n{json.dumps(doc, indent=2)}",
                                None if prop is None else prop.name, found)

    def _evidence(prop: Property | None, accepted: list) -> dict[str, Any] | None:
        """The evidence of a property's failure, when the accepted steps replay from the one initial state."""
        if prop is None or len(init_states) != 1:
            return None
        try:
            return evidence.build(model, prop.name, accepted)
        except (KcmError, KeyError, AttributeError, TypeError, IndexError):
            return None  # a model the evidence cannot replay or name: the scenario is the evidence

    def start(self: Any, state: Any, setup: list) -> None:
        self.current = state
        self.trace = []
        self.enabled = None
        broken = _check_state(model, always, state)
        if broken is not None:
            fail(self, "the initial state", broken)
        for action in setup:
            advance(self, action)

    def advance(self: Any, action: Any) -> None:
        before = self.current
        fp = fingerprint(before)
        try:
            after, effects = model.step(before, action)
        except KcmError as err:
            self.trace.append((action, err.name))
            if fingerprint(self.current) != fp:
                fail(self, f"refused step {action!r} ({err.name}) changed the state")
            if model.next_state(before, action) is not None:
                fail(self, f"step refuses {action!r} ({err.name}) but next_state accepts it")
            return
        self.trace.append((action, None))
        if model.next_state(before, action) != (None if after == before else after):
            fail(self, f"next_state disagrees with step on {action!r}")
        broken = _check_step(model, steps, before, action, after, effects)
        if broken is not None:
            fail(self, f"step {action!r}", broken)
        broken = _check_state(model, always, after)
        if broken is not None:
            fail(self, f"after {action!r} the state", broken)
        if reached is not None:
            reached.update(p.name for p in sometimes if p.name not in reached and p.condition(model, after))
            reached.update(p.name for p in sometimes_step
                           if p.name not in reached and p.condition(model, before, action, after, effects))
        self.current = after
        self.enabled = None

    def enabled_actions(self: Any) -> list:
        if self.enabled is None:
            self.enabled = list(model.actions(self.current))
        return self.enabled

    # With contract ops, a run starts by creating topics: ops on topics that do not exist are mostly refusals.
    setup = (st.lists(op_strategy(CreateTopic, config, topics, partitions), min_size=1, max_size=len(topics))
             if contract_ops else st.just([]))
    ns: dict[str, Any] = {
        "__doc__": f"Hypothesis machine over {type(model).__name__}: actions as rules, properties as invariants.",
        "advance": advance,
        "enabled_actions": enabled_actions,
        "init": initialize(state=st.sampled_from(init_states), setup=setup)(start),
    }

    def any_enabled(self: Any, data: st.DataObject) -> None:
        advance(self, data.draw(st.sampled_from(enabled_actions(self)), label="action"))

    ns["any_enabled_action"] = rule(data=st.data())(
        precondition(lambda self: bool(enabled_actions(self)))(any_enabled))
    if contract_ops:
        for op, cls in CONTRACT_OPS.items():
            def do(self: Any, action: Any) -> None:
                assume(not outside_controller_paths(self.current, action))
                advance(self, action)
            do.__name__ = f"op_{op}"
            ns[do.__name__] = rule(action=op_strategy(cls, config, topics, partitions))(do)
    return type(name, (RuleBasedStateMachine,), ns)

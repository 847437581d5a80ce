"""The generic Hypothesis machine: rules from the model's actions, invariants from its properties.

A small model of broker liveness (brokers fail and start; a refused step raises BrokerNotAvailable)
exercises the builder itself: a sound model passes, a broken property or a broken refusal is caught,
shrunk to the shortest op sequence and printed as a `kcm run` scenario that names those ops.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test
from kcm.checkers.gate import hypothesis_machine as hm
from kcm.model.actions import CONTRACT_OPS, BrokerFail, BrokerStart, CreateTopic, from_step
from kcm.model.cluster import ClusterConfig
from kcm.model.effects import Effects
from kcm.model.errors import BrokerNotAvailable
from kcm.model.fingerprint import fingerprint
from kcm.model.interface import ALWAYS, SOMETIMES, SOMETIMES_STEP, STEP, ModelBase, Property

CONFIG = ClusterConfig((0, 1, 2), first_controller=1)
SMALL = settings(max_examples=60, stateful_step_count=12, deadline=None, derandomize=True, database=None,
                 report_multiple_bugs=False)


class LivenessModel(ModelBase):
    """Live brokers only; `keep_one` refuses to fail the last live broker, `leaky` breaks the refusal rule."""

    def __init__(self, props: list[Property], keep_one: bool = False, leaky: bool = False) -> None:
        self.config = CONFIG
        self.props = props
        self.keep_one = keep_one
        self.leaky = leaky

    def init_states(self):
        return [tuple(CONFIG.brokers)]

    def actions(self, state):
        return [BrokerFail(b) for b in state] + [BrokerStart(b) for b in CONFIG.brokers if b not in state]

    def step(self, state, action):
        if isinstance(action, BrokerFail):
            if action.broker not in state or (self.keep_one and len(state) == 1):
                raise BrokerNotAvailable(f"broker {action.broker} cannot fail")
            return tuple(b for b in state if b != action.broker), Effects()
        if isinstance(action, BrokerStart):
            if action.broker in state:
                raise BrokerNotAvailable(f"broker {action.broker} is already live")
            return tuple(sorted(state + (action.broker,))), Effects()
        raise BrokerNotAvailable(f"{type(action).__name__} is not modelled here")

    def next_state(self, state, action):
        try:
            after, _ = self.step(state, action)
        except BrokerNotAvailable:
            return None if not self.leaky else state[:1]
        return None if after == state else after

    def properties(self):
        return self.props

    def within_boundary(self, state):
        return True

    def fingerprint(self, state):
        return fingerprint(state)


SOME_BROKER_LIVE = Property("SomeBrokerLive", ALWAYS, lambda m, s: len(s) >= 1, "some broker is live")
NO_RESTART_OF_0 = Property("NoRestartOf0", STEP,
                           lambda m, b, a, s, e: not (isinstance(a, BrokerStart) and a.broker == 0),
                           "broker 0 never starts again")


def _run(model: Any, tmp_path, **kw) -> None:
    machine = hm.build_machine(model, name="Liveness", scenario_dir=str(tmp_path), **kw)
    run_state_machine_as_test(machine, settings=SMALL)


def _scenario(message: str) -> dict:
    return json.loads(message[message.index("{"):])


def test_sound_model_passes(tmp_path):
    _run(LivenessModel([SOME_BROKER_LIVE], keep_one=True), tmp_path)
    assert not list(tmp_path.iterdir())


def test_always_violation_shrinks_to_a_replayable_scenario(tmp_path):
    with pytest.raises(hm.PropertyViolation) as info:
        _run(LivenessModel([SOME_BROKER_LIVE]), tmp_path)
    msg = str(info.value)
    assert "SomeBrokerLive" in msg
    doc = _scenario(msg)
    assert doc["config"] == {"brokers": [0, 1, 2], "controller": 1, "unclean_leader_election": False,
                             "min_insync_replicas": 1, "rules": "seeds", "truncation": "high_watermark"}
    # Shrunk: exactly the three failures that empty the cluster, nothing else.
    assert sorted(s["broker"] for s in doc["steps"]) == [0, 1, 2]
    assert {s["op"] for s in doc["steps"]} == {"broker_fail"}
    path = re.search(r"kcm run (\S+)", msg).group(1)
    assert json.loads(open(path, encoding="utf-8").read()) == doc
    ev = info.value.evidence  # the same evidence the explorers give: states, diffs, the witness
    assert ev["property"] == "SomeBrokerLive" and len(ev["steps"]) == 3 and ev["final_state"] == {"state": []}
    assert ev["witness"]["entries"] == [{"what": "state", "before": [ev["steps"][-1]["action"]["broker"]],
                                         "after": []}] and "witness: state\n" in msg


def test_step_violation_is_caught(tmp_path):
    with pytest.raises(hm.PropertyViolation) as info:
        _run(LivenessModel([NO_RESTART_OF_0]), tmp_path)
    steps = _scenario(str(info.value))["steps"]
    assert steps == [{"op": "broker_fail", "broker": 0}, {"op": "broker_start", "broker": 0}]


def test_refusals_are_recorded_as_expected_errors(tmp_path):
    # contract_ops also tries ops the model refuses; a refusal enters the scenario with its error name.
    with pytest.raises(hm.PropertyViolation) as info:
        _run(LivenessModel([NO_RESTART_OF_0]), tmp_path, contract_ops=True)
    steps = _scenario(str(info.value))["steps"]
    assert steps[-1] == {"op": "broker_start", "broker": 0}
    assert all(from_step(s).to_step() == {k: v for k, v in s.items() if k != "expect_error"} for s in steps)


def test_step_and_next_state_must_agree(tmp_path):
    with pytest.raises(hm.PropertyViolation, match="next_state accepts it"):
        _run(LivenessModel([], keep_one=True, leaky=True), tmp_path, contract_ops=True)


@SMALL
@given(st.data())
def test_every_contract_op_gets_argument_strategies(data):
    # Every generated action is a valid contract step naming only configured brokers.
    for cls in CONTRACT_OPS.values():
        action = data.draw(hm.op_strategy(cls, CONFIG))
        assert isinstance(action, cls)
        assert from_step(action.to_step()) == action
        brokers = [v for k, v in action._asdict().items() if k == "broker" and v != -1]
        assert set(brokers) <= set(CONFIG.brokers)


def test_create_topic_strategy_gives_both_contract_forms():
    seen: set[bool] = set()

    @SMALL
    @given(hm.op_strategy(CreateTopic, CONFIG))
    def draw(action):
        seen.add(bool(action.assignment))
        assert action.assignment or (action.partitions >= 1 and action.replication_factor >= 1)

    draw()
    assert seen == {True, False}


def test_profiles_are_chosen_by_environment(monkeypatch):
    monkeypatch.setenv(hm.PROFILE_ENV, "nope")
    with pytest.raises(ValueError, match="nope"):
        hm.profile_settings()
    monkeypatch.setenv(hm.PROFILE_ENV, "thorough")
    name, chosen = hm.profile_settings()
    assert (name, chosen.max_examples, chosen.stateful_step_count) == ("thorough", 1000, 80)
    monkeypatch.delenv(hm.PROFILE_ENV)
    name, chosen = hm.profile_settings()
    assert (name, chosen.max_examples, chosen.derandomize, chosen.deadline) == ("ci", 60, True, None)


def test_sometimes_properties_reached_are_collected(tmp_path):
    all_down_once = Property("AllButOneDown", SOMETIMES, lambda m, s: len(s) == 1, "one broker left")
    restart = Property("SomeRestart", SOMETIMES_STEP, lambda m, b, a, s, e: isinstance(a, BrokerStart), "restart")
    never = Property("Never", SOMETIMES, lambda m, s: len(s) > 3, "more brokers than configured")
    reached: set[str] = set()
    _run(LivenessModel([all_down_once, restart, never], keep_one=True), tmp_path, reached=reached)
    assert reached == {"AllButOneDown", "SomeRestart"}


def test_contract_model_wraps_a_start_step_pair():
    model = hm.ContractModel(CONFIG, lambda c: (tuple(c.brokers), Effects()),
                             lambda c, s, a: LivenessModel([]).step(s, a), [SOME_BROKER_LIVE])
    assert model.init_states() == [(0, 1, 2)]
    assert model.next_state((0, 1, 2), BrokerFail(1)) == (0, 2)
    assert model.next_state((0, 2), BrokerFail(1)) is None
    assert model.actions((0, 1, 2)) == []

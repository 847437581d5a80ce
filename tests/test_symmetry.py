"""Symmetry reduction: renaming brokers, the configuration's group, soundness on every reachable state, counts."""

from __future__ import annotations

import copy
import json

from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import bfs
from kcm.checkers.explore.verdicts import successors
from kcm.checkers.reductions.symmetry import SymmetricModel, equivariance_failures, order_fixed_brokers, symmetry_group
from kcm.model import actions as A
from kcm.model.cluster import ClusterConfig
from kcm.model.symmetry import rename_action, rename_cluster
from kcm.reference import api

from kcm.cli import main

# Brokers 2 and 3 hold no replica and are both reassignment candidates: interchangeable. One failure at a time, so
# the lowest-live-id election only ever picks 0 or 1.
FOUR = {"name": "four", "brokers": [0, 1, 2, 3], "topics": {"t": {"0": [0, 1]}},
        "families": ["broker_failure", "controller_failover", "reassignment", "preferred"],
        "bounds": {"max_failures": 1, "max_controller_epoch": 2, "max_leader_epoch": 3,
                   "reassign_targets": [[1, 2], [1, 3]]}}
SWAP = {2: 3, 3: 2}


def reachable(model, limit: int | None = None) -> list:
    """The states reachable inside the boundary in breadth-first order, all of them or about the first `limit`."""
    order = list(model.init_states())
    seen = set(order)
    i = 0
    while i < len(order) and (limit is None or len(order) < limit):
        for _, nxt, _ in successors(model, order[i]):
            if nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
        i += 1
    return order


def test_renaming_touches_every_broker_field_and_keeps_maps_sorted():
    model = BoundedSystem(FOUR)
    init = model.init_states()[0]
    # Reassigning to [1, 2] and renaming 2 <-> 3 is the same state as reassigning to [1, 3]: AR, RAR, OAR, replica
    # maps and states, LeaderAndIsr and the brokers' own replica data all carry the renamed id.
    via2 = init
    for action in (A.Reassign(("t", 0), (1, 2)), A.BrokerFail(2), A.BrokerStart(2), A.BrokerFail(0)):
        via2 = model.next_state(via2, action)
        assert via2 is not None
    via3 = init
    for action in (A.Reassign(("t", 0), (1, 3)), A.BrokerFail(3), A.BrokerStart(3), A.BrokerFail(0)):
        via3 = model.next_state(via3, action)
    assert via2 != via3
    assert rename_cluster(SWAP, via2) == via3
    assert rename_cluster(SWAP, rename_cluster(SWAP, via2)) == via2
    renamed = rename_cluster({0: 3, 3: 0}, via2)
    for m in (renamed.brokers, renamed.replicas, renamed.ctx.replica_states, renamed.ghost.elected):
        assert list(m) == sorted(m)
    assert list(renamed.zk.brokers) == sorted(renamed.zk.brokers)
    assert renamed.zk.brokers == (0, 1, 2) and not dict(renamed.brokers)[3].alive  # 0 was the dead one
    assert rename_action(SWAP, A.Reassign(("t", 0), (1, 2))) == A.Reassign(("t", 0), (1, 3))
    assert rename_action(SWAP, A.ControllerResign()) == A.ControllerResign()


def test_group_is_the_permutations_that_keep_the_configuration():
    assert symmetry_group(BoundedSystem(load_config("tiny"))) == [{}]  # the ordered assignment (0, 1, 2) pins all
    assert symmetry_group(BoundedSystem(FOUR)) == [{}, SWAP]
    five = copy.deepcopy(FOUR)
    five["brokers"] = [0, 1, 2, 3, 4]
    five["bounds"]["reassign_targets"] = [[1, 2], [1, 3], [1, 4]]
    assert len(symmetry_group(BoundedSystem(five))) == 6
    lopsided = copy.deepcopy(FOUR)
    lopsided["bounds"]["reassign_targets"] = [[1, 2]]  # 3 is never a target: 2 and 3 differ
    assert symmetry_group(BoundedSystem(lopsided)) == [{}]
    # Two failures: with 0 and 1 down the election picks 2, so 2 is pinned.
    two_failures = copy.deepcopy(FOUR)
    two_failures["bounds"]["max_failures"] = 2
    assert order_fixed_brokers(BoundedSystem(two_failures)) == {0, 1, 2}
    assert symmetry_group(BoundedSystem(two_failures)) == [{}]


def test_group_commutes_with_every_step_and_property_on_every_reachable_state():
    model = BoundedSystem(FOUR)
    assert equivariance_failures(model, symmetry_group(model), reachable(model)) == []


def test_group_commutes_with_the_data_plane_where_it_is_on():
    # Brokers 2 and 3 hold no replica: they stay interchangeable with the data plane on (whose space does not close,
    # so the first states in breadth-first order are checked). Swapping the replicas 1 and 2 is not a symmetry.
    config = {"name": "idle", "brokers": [0, 1, 2, 3], "topics": {"t": {"0": [0, 1]}},
              "families": ["broker_failure", "data_plane"],
              "bounds": {"max_failures": 1, "max_records": 1, "max_leader_epoch": 2}}
    model = BoundedSystem(config)
    assert symmetry_group(model) == [{}, SWAP]
    states = reachable(model, limit=800)
    assert equivariance_failures(model, [{}, SWAP], states) == []
    assert equivariance_failures(model, [{}, {1: 2, 2: 1}], states) != []


def test_the_pinned_election_order_is_needed():
    two_failures = copy.deepcopy(FOUR)
    two_failures["bounds"]["max_failures"] = 2
    model = BoundedSystem(two_failures)
    assert equivariance_failures(model, [{}, SWAP], reachable(model, limit=300)) != []


def test_reduced_run_keeps_one_state_per_orbit_and_the_same_verdicts():
    model = BoundedSystem(FOUR)
    reduced_model = SymmetricModel(model)
    full, reduced = bfs.explore(model), bfs.explore(reduced_model)
    assert reduced.distinct_states < full.distinct_states
    orbits = {reduced_model.fingerprint(s) for s in reachable(model)}
    assert (full.distinct_states, reduced.distinct_states) == (len(set(reachable(model))), len(orbits))
    props = model.properties()
    assert reduced.verdicts(props) == full.verdicts(props)
    assert reduced.depth == full.depth


def test_trivial_group_changes_nothing_on_tiny():
    model = BoundedSystem(load_config("tiny"))
    full, reduced = bfs.explore(model), bfs.explore(SymmetricModel(model))
    assert (reduced.distinct_states, reduced.transitions) == (full.distinct_states, full.transitions)


def test_cli_reports_reduced_and_unreduced_counts(capsys, tmp_path):
    config = tmp_path / "four.json"
    config.write_text(json.dumps(FOUR))
    assert main(["explore", "--config", str(config), "--quiet", "--json", "--reductions", "symmetry",
                 "--symmetry-compare"]) == 0
    sym = json.loads(capsys.readouterr().out)["symmetry"]
    assert sym["group_size"] == 2 and sym["reduced_states"] < sym["unreduced_states"]
    assert main(["explore", "--config", str(config), "--quiet", "--symmetry"]) == 0
    out = capsys.readouterr().out
    assert f"{sym['reduced_states']:,} states reduced" in out and "without" not in out


def test_renaming_commutes_with_the_data_plane_and_first_election():
    # The same run twice, the second with brokers 0 and 2 swapped everywhere (config, assignment, every action):
    # the end states are renamings of each other, logs, HWs and remote LEOs included.
    swap = {0: 2, 2: 0}
    tp = ("t", 0)
    runs = []
    for perm in ({}, swap):
        config = ClusterConfig(brokers=(0, 1, 2), first_controller=perm.get(0, 0), truncation="leader_epoch")
        state, _ = api.start(config)
        trace = [A.CreateTopic("t", ((0, (0, 1, 2)),)), A.Produce(tp), A.Replicate(tp, 1), A.Replicate(tp, 2),
                 A.Replicate(tp, 1), A.BrokerFail(1), A.BrokerStart(1), A.Produce(tp), A.Replicate(tp, 2)]
        for action in trace:
            state, _ = api.step(config, state, rename_action(perm, action))
        runs.append(state)
    plain, swapped = runs
    assert dict(plain.replicas)[("t", 0, 0)].remote_leo  # the leader has heard from a follower
    assert all(d.log for _, d in plain.replicas) and plain != swapped
    assert rename_cluster(swap, plain) == swapped

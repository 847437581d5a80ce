"""Z3 proofs that the controller's safety invariants are inductive, and bounded model checking.

Both encodings build one symbolic view of the state (vocabulary.py: `Sym`, the model's field names), and each
property's formula is written once over it, keyed by its id (formulas.py); the induction and BMC read them there.

The encoding (encoding.py) is one symbolic partition on a cluster of N brokers with the controller, ZooKeeper
and broker views; its partition and replica moves are generated from model/tables.py. The invariants
(invariants.py: property ids and their lemmas) are checked by induction (proofs.py): Init => Inv and Inv and
Next => Inv', and the step invariants as Inv and Next => Step(s, s', step).

Strengthenings found and proved (each is part of the inductive invariant it belongs to, so it is proved too):

- OneLiveLeaderPerEpoch is not inductive alone: a state where broker 2 believes it leads with epoch 0 while
  ZooKeeper's LeaderAndIsr names broker 0 for epoch 0 lets broker 0 accept that request and a second leader
  appears. Strengthening "BelievedLeadersWereElected": a broker whose replica leads with epoch e was written
  as leader with e (ghost elected[e] = it) and e <= the leader epoch in ZooKeeper.
- ArShrinksLast carries the state invariant "ReassignmentArIsUnion" (during a reassignment
  AR = OAR + RAR, otherwise OAR = RAR = {}); that is not inductive alone: topic creation on a
  NonExistentPartition that still has a reassignment flag would overwrite AR. Strengthening
  "AbsentPartitionsAreNotReassigned": a NonExistentPartition has no reassignment in progress.
- LeaderInIsrInAr allows a leaderless partition's one ISR member outside AR (a replaced reassignment drops
  it while the controller never empties the ISR); it is inductive with ReassignmentArIsUnion and
  AbsentPartitionsAreNotReassigned (the reassignment selector then elects inside AR).
- ControllerEpochMonotone (no broker ahead of /controller_epoch) and ValidTransition are
  inductive as stated, given "well-typed" (every state code known to the rule set, ids in range), which every
  proof carries and proves.

Abstractions: LeaderAndIsr requests in flight are the ghost arrays elected[e] (the leader written with leader
epoch e) and written_by[e] (the controller epoch that wrote it); a broker may receive any of them, sent by that
controller or any later one, so stale, duplicated and reordered requests are all covered. The selectors choose
any eligible replica; tests/test_prove_selectors.py checks that on every concrete AR / ISR / live set of three
brokers this is exactly the reference selectors' choice over all orders of the replica list.

tests/test_prove_refinement.py checks that every step of the reference controller (three brokers, three ops
deep) is a run of at most seven symbolic steps on the controller/ZooKeeper view. Replacing a
reassignment that is still running is one symbolic step (ReassignmentReplace; the refinement test does not
replace one). Not encoded: several partitions (one symbolic partition stands for any of them).

Seeded-bug switches of the one encoding: bump_epoch_on_election=False breaks OneLiveLeaderPerEpoch,
brokers_check_controller_epoch=False breaks ControllerEpochMonotone (the zombie-controller trace).

Bounded model checking of an explorer config (`kcm prove --bmc K --config NAME`) uses a second, exact encoding
(bounded.py: one symbolic step per reference operation of the config's families, with its bounds) and checks the
explorer's properties over it under the same names, with the formulas of formulas.py (bounded_bmc.py);
tests/test_prove_bounded.py checks that it allows exactly the explicit model's moves on every state of the `tiny`
config and gives the explorer's verdicts.

specs/prove-strengthenings.md holds the same list for readers of the README.
"""

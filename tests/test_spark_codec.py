"""What the Spark engine's Python processes keep: the part-wise state codec, the kept model, the driver's fp set."""

from __future__ import annotations

import random
from typing import NamedTuple

from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore.codec import StateCodec, kept_model
from kcm.checkers.explore.visited import FingerprintSet
from kcm.checkers.spark.bfs import _as_fps

from tests.explored import bfs_states


def _states(config: str, levels: int) -> list:
    """The states of the first `levels` BFS levels of a config, parents before their successors."""
    return bfs_states(BoundedSystem(load_config(config)), levels)


def test_states_come_back_equal_and_of_their_type_and_share_their_equal_parts():
    states = _states("controller", 6)
    writer, reader = StateCodec(), StateCodec()  # the driver's and a worker's, as in a run
    decoded = [reader.decode(writer.encode(s)) for s in states]
    assert decoded == states
    assert all(type(d) is type(s) for d, s in zip(decoded, states, strict=True))
    # Equal parts of different decoded states are one object, as a search's own states share them.
    firsts = [d[0] for d in decoded]
    assert len({id(p) for p in firsts}) == len({repr(p) for p in firsts}) < len(firsts)
    # A record within the state (the znodes, the controller's context) travels field by field: equal fields of
    # unequal records are one object too.
    assert len({d.ctx for d in decoded}) > 1
    live = [d.ctx.live_brokers for d in decoded]
    assert len({id(x) for x in live}) == len(set(live)) < len({d.ctx for d in decoded})
    # A decoded state encoded again (as a successor that kept its parent's parts) reads back the same.
    assert [reader.decode(reader.encode(d)) for d in decoded[:50]] == states[:50]


def test_a_state_that_is_not_a_named_tuple_is_pickled_whole_and_memos_start_afresh_when_full():
    codec = StateCodec(limit=3)
    values = [(1, 2), {"a": [1, 2]}, "text", None, ((1,), (1,))]
    assert [codec.decode(codec.encode(v)) for v in values] == values
    states = _states("tiny", 4)
    assert [codec.decode(codec.encode(s)) for s in states] == states
    parts = len(states[0]) + 1  # a state's parts and its type: what one call adds after starting afresh
    assert len(codec.encoded) <= 3 + parts and len(codec.decoded) <= 3 + parts


def test_equal_field_values_of_other_types_or_other_objects_come_back_as_they_were():
    codec, reader = StateCodec(), StateCodec()
    values = [Rec(1, (1, 2)), Rec(True, ("a", 2)), Rec(1.0, [1, 2]), Rec(1, (1, 2)), Rec(Rec(1, 2), (1, 2))]
    back = [reader.decode(codec.encode(v)) for v in values]
    assert back == values
    assert [(type(b.flag), type(b.items)) for b in back] == [(type(v.flag), type(v.items)) for v in values]
    # Equal values met again in a field (other objects, as a step builds them) reuse their bytes.
    big = Rec("x" * 70_000, (1, 2))  # a part of 64 KiB or more: the record's lengths take 32 bits
    assert reader.decode(codec.encode(big)) == big and codec.encode(big)[:1] != codec.encode(values[0])[:1]
    kept = {k: v[1] for k, v in codec.values[Rec][1].items()}
    again = Rec(1, tuple([1, 2]))
    assert codec.encode(again) == codec.encode(values[0])
    assert {k: v[1] for k, v in codec.values[Rec][1].items()} == kept | {(1, 2): codec.encode((1, 2))}


class Rec(NamedTuple):
    """A record with fields of any type, for the codec's tests."""

    flag: object
    items: object


def test_a_process_keeps_one_model_per_search_and_forgets_old_searches():
    first, other = object(), object()
    assert kept_model("search-a", first) is first
    assert kept_model("search-a", other) is first  # a later task of the search gets the kept one
    assert kept_model("search-b", other) is other
    assert kept_model("search-c", first) is first
    assert kept_model("search-a", other) is other  # only the last two searches are kept


def test_the_drivers_fingerprint_set_answers_as_a_python_set_does():
    rng = random.Random(7)
    fps = FingerprintSet()
    truth: set[int] = set()
    for _ in range(20):
        batch = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(rng.randrange(0, 300))]
        batch += rng.sample(sorted(truth), min(len(truth), 20)) if truth else []
        fps.add(_as_fps(batch))
        truth.update(batch)
        probe = batch[:10] + [rng.randrange(-(1 << 63), 1 << 63) for _ in range(50)] + [-(1 << 63), (1 << 63) - 1]
        got = ~fps.unseen(_as_fps(probe))
        assert got.tolist() == [p in truth for p in probe]
        assert len(fps) == len(truth)

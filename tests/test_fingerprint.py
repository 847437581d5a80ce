"""Fingerprints: equal states agree, every process agrees, the encoding round-trips."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from kcm.model.fingerprint import decode, decode_compressed, encode, encode_compressed, fingerprint
from kcm.model.fmap import freeze

from tests.explored import bfs_states
from tests.strategies import clusters


@given(clusters)
def test_equal_states_have_equal_fingerprints(state):
    rebuilt = decode(encode(state))
    assert rebuilt == state and rebuilt is not state
    assert fingerprint(rebuilt) == fingerprint(state)


@given(clusters)
def test_encoding_round_trips(state):
    assert decode(encode(state)) == state
    assert decode_compressed(encode_compressed(state)) == state


@given(st.dictionaries(st.tuples(st.text(max_size=3), st.integers()), st.integers(), max_size=6))
def test_maps_are_canonical_whatever_the_insertion_order(d):
    forward = freeze(d)
    backward = freeze(dict(reversed(list(d.items()))))
    assert forward == backward and fingerprint(forward) == fingerprint(backward)


@given(clusters, clusters)
def test_different_states_have_different_fingerprints(a, b):
    if a != b:
        assert fingerprint(a) != fingerprint(b)


@settings(max_examples=20, deadline=None)
@given(st.lists(clusters, min_size=1, max_size=5))
def test_fingerprints_are_stable_across_processes(states):
    blob = encode(states)
    script = (
        "import sys; from kcm.model.fingerprint import decode, fingerprint; "
        "print(' '.join(str(fingerprint(s)) for s in decode(sys.stdin.buffer.read())))"
    )
    # A different hash seed in the child: Python's own hash would differ, the fingerprint must not.
    out = subprocess.run([sys.executable, "-c", script], input=blob, capture_output=True, check=True,
                         env={"PYTHONHASHSEED": "12345", "PATH": ""})
    assert out.stdout.decode().split() == [str(fingerprint(s)) for s in states]


@given(clusters)
def test_fingerprint_ignores_how_sub_values_are_shared(state):
    # A deep copy rebuilt value by value shares no tuples; equal value, so equal fingerprint.
    import copy

    rebuilt = copy.deepcopy(state)
    shared = state._replace(ctx=state.ctx._replace(live_brokers=state.zk.brokers)) if (
        state.ctx.live_brokers == state.zk.brokers) else state
    assert fingerprint(rebuilt) == fingerprint(state) == fingerprint(shared)
    twin = ("t", 0)
    assert fingerprint(((twin, twin),)) == fingerprint(((("t", 0), ("t", 0)),))


def _without_empty_trailing(record):
    """A record whose newest field is empty, pickled as the record it was before that field was added."""
    import copyreg

    fields = tuple(record) if record[-1] else tuple(record)[:-1]
    return copyreg.__newobj__, (type(record), *fields)


def _default_pickle(value, fast: bool) -> bytes:
    """Pickle's bytes of `value` by its default reductions (a private dispatch table skips copyreg's), but for a
    controller context's empty event queue and a broker's empty half-applied partitions, left out so that
    coarse-grain states keep their fingerprints."""
    import io
    import pickle

    from kcm.model.cluster import BrokerState, ControllerContext

    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, 5)
    pickler.dispatch_table = {ControllerContext: _without_empty_trailing, BrokerState: _without_empty_trailing}
    pickler.fast = fast
    pickler.dump(value)
    return buf.getvalue()


@given(clusters)
def test_the_records_own_reduction_pickles_the_default_bytes(state):
    # kcm.model.cluster registers a compiled reduction for its records; fingerprints must not move with it.
    from kcm.model.fingerprint import canonical_bytes

    assert encode(state) == _default_pickle(state, fast=False)
    assert canonical_bytes(state) == _default_pickle(state, fast=True)
    for part in state:
        assert canonical_bytes(part) == _default_pickle(part, fast=True)


def _shape(value):
    """A value's types, place by place (equal values of unequal shapes are 1 and True, (1,) and (True,))."""
    if isinstance(value, tuple):
        return type(value), tuple(_shape(v) for v in value)
    return type(value)


def _fields(record, path=()):
    """(path, value) of every field of a record, records within it opened in turn."""
    for name, value in zip(type(record)._fields, record, strict=True):
        yield path + (name,), value
        if hasattr(type(value), "_fields"):
            yield from _fields(value, path + (name,))


def test_equal_values_of_a_field_have_the_same_types_in_explored_states():
    # What the memos by value rely on (the part fingerprints here, the Spark codec's bytes of a field): a field
    # never holds 1 in one state and True in another, so equal values pickle alike wherever they were met.
    from kcm.checkers.core.bounded import BoundedSystem, load_config

    for config in ("controller", "default", "unclean", "async", "tla-kip320"):
        shapes: dict[tuple, dict] = {}
        for state in bfs_states(BoundedSystem(load_config(config)), levels=6):
            for path, value in _fields(state):
                known = shapes.setdefault(path, {})
                assert known.setdefault(value, _shape(value)) == _shape(value), (config, path, value)

"""A checkpoint's stored frontier states: exact round trips, a resume that replays no level, hostile bytes refused."""

from __future__ import annotations

import json
import zlib

import msgpack
import numpy as np
import pytest
from kcm.checkers.core.bounded import BoundedSystem, load_config
from kcm.checkers.explore import checkpoint, level_loop, stored_states
from kcm.checkers.explore.stored_states import pack, unpack

from kcm.cli import main
from tests.explored import as_explored, bfs_states
from tests.test_explore_resume import _refused, _rewrite

KEYS = ("distinct_states", "transitions", "depth", "complete", "verdicts", "counterexamples", "goals")


def test_states_round_trip_exactly_with_their_fingerprints():
    model = BoundedSystem(load_config("controller"))
    states = bfs_states(model, limit=3 * stored_states.CHUNK)  # several chunks, the last one short
    back = [s for batch in unpack(pack(states)) for s in batch]
    assert back == states
    assert [model.fingerprint(s) for s in back] == [model.fingerprint(s) for s in states]
    assert [type(s) for s in back] == [type(s) for s in states]
    assert not list(unpack(pack([])))


def test_a_value_the_encoding_does_not_know_is_refused_when_packing():
    model = BoundedSystem(load_config("tiny"))
    state = model.init_states()[0]
    with pytest.raises(TypeError, match="float"):
        pack([state._replace(zombie=1.5)])


def _arrays(chunks: list[bytes]) -> dict[str, np.ndarray]:
    ends = np.cumsum([len(c) for c in chunks], dtype=np.uint64)
    return {"states.data": np.frombuffer(b"".join(chunks), dtype=np.uint8), "states.ends": ends}


@pytest.mark.parametrize("chunks, problem", [
    ([b"not zlib"], "does not inflate"),
    ([zlib.compress(b"\xc1")], "not MessagePack"),  # 0xc1: never used
    ([zlib.compress(msgpack.packb({"a": 1}))], "record type"),  # a map is a record: its key must be a type number
    ([zlib.compress(msgpack.packb([{9999: [1]}]))], "record type"),
    ([zlib.compress(msgpack.packb([{0: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]}]))], "fields"),
    ([zlib.compress(msgpack.packb([{0: [], 1: []}]))], "entries"),
    ([zlib.compress(msgpack.packb(7))], "not a list"),
    ([zlib.compress(msgpack.packb([1]))[:-2]], "cut"),
    ([zlib.compress(msgpack.packb([1])) + b"more"], "followed"),
    ([zlib.compress(msgpack.packb([1]) + b"\x01")], "extra data"),
])
def test_malformed_stored_states_are_a_value_error(chunks, problem):
    with pytest.raises(ValueError, match=problem):
        list(unpack(_arrays(chunks)))


def test_chunk_ends_that_do_not_fit_and_an_inflation_bomb_are_refused(monkeypatch):
    good = _arrays([zlib.compress(msgpack.packb([1]))])
    for bad in ({**good, "states.ends": good["states.ends"] + np.uint64(1)},
                {**good, "states.ends": good["states.ends"].astype(np.int64)},
                {**good, "states.ends": np.zeros(0, dtype=np.uint64)}):
        with pytest.raises(ValueError):
            list(unpack(bad))
    monkeypatch.setattr(stored_states, "MAX_CHUNK", 1000)
    with pytest.raises(ValueError, match="too big"):
        list(unpack(_arrays([zlib.compress(msgpack.packb([b"\x00" * 5000]))])))


def _partial(tmp_path, capsys, config="controller", states=3000):
    """A partial run's checkpoint (every level boundary writes one; the last one's frontier is stored)."""
    ckpt = tmp_path / f"{config}.ckpt"
    assert main(["explore", "--config", config, "--quiet", "--max-states", str(states), "--checkpoint", str(ckpt),
                 "--checkpoint-every", "0"]) == 3
    capsys.readouterr()
    return ckpt


def _summary(args, capsys) -> dict:
    assert main(["explore", "--quiet", "--json", *args]) in (0, 1)
    return json.loads(capsys.readouterr().out)


def test_a_resume_from_stored_states_replays_no_level_and_ends_as_an_uninterrupted_run(tmp_path, capsys,
                                                                                     monkeypatch):
    ckpt = _partial(tmp_path, capsys)
    snap = checkpoint.load(ckpt, as_explored(load_config("controller"))[1])
    assert "states.ends" in snap.arrays and snap.meta["depth"] >= 4

    def no_replay(*_args, **_kwargs):
        raise AssertionError("a resume from stored states replayed the levels")

    monkeypatch.setattr(level_loop, "replay_levels", no_replay)
    resumed = _summary(["--config", "controller", "--resume", str(ckpt)], capsys)
    monkeypatch.undo()
    whole = _summary(["--config", "controller"], capsys)
    assert {k: resumed[k] for k in KEYS} == {k: whole[k] for k in KEYS}
    assert resumed["distinct_states"] == 27697


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_resume_does_not_write_the_level_it_resumed_again(tmp_path, capsys, monkeypatch, workers):
    # With `--checkpoint F --resume F` (the resume line kcm prints), a periodic checkpoint made due by the rebuild
    # would overwrite the stop's file, with its states, by one of the same level without them.
    ckpt = _partial(tmp_path, capsys)
    depth = checkpoint.load(ckpt, as_explored(load_config("controller"))[1]).meta["depth"]
    written, real = [], checkpoint.Checkpointer.write
    monkeypatch.setattr(level_loop, "STORE_BELOW", 10)  # the periodic checkpoints store no states

    def write(self, visited, frontier, meta, stored=None, give_up=None):
        written.append(meta["depth"])
        return real(self, visited, frontier, meta, stored, give_up)

    monkeypatch.setattr(checkpoint.Checkpointer, "write", write)
    resumed = _summary(["--config", "controller", "--workers", workers, "--checkpoint", str(ckpt),
                        "--checkpoint-every", "0", "--resume", str(ckpt)], capsys)
    assert resumed["distinct_states"] == 27697
    assert written and min(written) == depth + 1


def test_a_resume_says_whether_it_decodes_the_stored_frontier_or_replays(tmp_path, capsys, monkeypatch):
    ckpt = _partial(tmp_path, capsys)
    assert main(["explore", "--config", "controller", "--resume", str(ckpt), "--json"]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"resuming {ckpt} at level ") and "decoding the frontier's 1,503 states stored" in first
    monkeypatch.setattr(stored_states, "msgpack", None)  # an install without MessagePack cannot read them
    assert main(["explore", "--config", "controller", "--resume", str(ckpt), "--json"]) == 0
    assert "replaying every visited state" in capsys.readouterr().err.splitlines()[0]


def test_a_big_frontier_is_stored_only_by_a_stop_and_a_file_without_states_replays(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(level_loop, "STORE_BELOW", 10)
    ckpt = _partial(tmp_path, capsys, "tiny", 200)
    identity = as_explored(load_config("tiny"))[1]
    assert "states.ends" not in checkpoint.load(ckpt, identity).arrays
    replayed, real = [], level_loop.replay_levels
    monkeypatch.setattr(level_loop, "replay_levels", lambda *a, **k: replayed.append(1) or real(*a, **k))
    assert _summary(["--config", "tiny", "--resume", str(ckpt)], capsys)["distinct_states"] == 381
    assert replayed


def test_without_messagepack_no_state_is_stored_and_stored_ones_are_replayed_instead(tmp_path, capsys,
                                                                                    monkeypatch):
    ckpt = _partial(tmp_path, capsys, "tiny", 200)
    monkeypatch.setattr(stored_states, "msgpack", None)
    other = _partial(tmp_path / "other", capsys, "tiny", 200)
    identity = as_explored(load_config("tiny"))[1]
    assert "states.ends" not in checkpoint.load(other, identity).arrays
    assert "states.ends" in checkpoint.load(ckpt, identity).arrays
    assert _summary(["--config", "tiny", "--resume", str(ckpt)], capsys)["distinct_states"] == 381


def _swap_two_states(arrays):
    batches = list(unpack(arrays))
    batches[0][0], batches[0][1] = batches[0][1], batches[0][0]
    arrays.update(pack([s for b in batches for s in b]))


def _other_states(arrays):
    model = BoundedSystem(load_config("tiny"))
    count = int(arrays["frontier"].size)
    arrays.update(pack([model.init_states()[0]] * count))


@pytest.mark.parametrize("change, problem", [
    (_swap_two_states, "stored frontier states are not the frontier"),
    (_other_states, "stored frontier states are not the frontier"),
    (lambda a: a.update({"states.data": a["states.data"][:-1]}), "stored frontier states"),
    (lambda a: a.update({"actions.3": a["actions.3"] + np.uint16(1)}), "parent links"),
    (lambda a: a.update({"parents.4": a["parents.4"] + np.uint32(10_000)}), "parent"),
    (lambda a: a.update(frontier=a["frontier"][::-1].copy()), "frontier"),
])
def test_stored_states_that_do_not_hang_together_are_refused_in_one_line(tmp_path, capsys, change, problem):
    ckpt = _partial(tmp_path, capsys, "tiny", 200)
    _rewrite(ckpt, change)  # a body with a matching checksum
    assert problem in _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)


def test_a_stored_state_is_data_a_crafted_record_type_cannot_name_code(tmp_path, capsys):
    ckpt = _partial(tmp_path, capsys, "tiny", 200)
    # An ext type or a class name in place of a record number: MessagePack hands it over as data, refused.
    crafted = [zlib.compress(msgpack.packb([msgpack.ExtType(1, b"os.system")])),
               zlib.compress(msgpack.packb([{"os.system": ["echo"]}]))]
    for chunk in crafted:
        _rewrite(ckpt, lambda a, c=chunk: a.update(_arrays([c])))
        assert "stored frontier states" in _refused(["--config", "tiny", "--resume", str(ckpt)], capsys)


def _levels_of(model, snap) -> np.ndarray:
    """Each visited fingerprint's level, as a replay of the file's parent links finds them."""
    from kcm.checkers.explore.visited import Visited, replay_levels

    visited = Visited.from_arrays(snap.arrays)
    levels = np.full(visited.seen.size, 255, dtype=np.uint8)
    replay_levels(model, visited, on_fingerprints=lambda level, fps: levels.__setitem__(
        np.searchsorted(visited.seen, fps), level))
    return levels


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_stored_checkpoint_of_the_local_engines_keeps_each_visited_states_level(tmp_path, capsys, workers):
    # With the states, each visited fingerprint's level (what the Spark engine needs to resume without a replay):
    # the one-process engine and `--workers` keep them beside the visited set as the search runs.
    ckpt = tmp_path / "c.ckpt"
    assert main(["explore", "--config", "controller", "--quiet", "--max-states", "3000", "--checkpoint", str(ckpt),
                 "--checkpoint-every", "0", "--workers", workers]) == 3
    capsys.readouterr()
    model, identity = as_explored(load_config("controller"))  # the command's model wrote it
    snap = checkpoint.load(ckpt, identity)
    assert {"states.ends", "levels"} <= snap.arrays.keys() and snap.arrays["levels"].dtype == np.uint8
    assert np.array_equal(snap.arrays["levels"], _levels_of(model, snap))


def test_a_resume_keeps_the_levels_for_its_next_checkpoint_whether_it_replays_or_decodes(tmp_path, capsys,
                                                                                        monkeypatch):
    # A file without states is replayed, and the replay finds each level's fingerprints: the resumed run's stop
    # stores them. A file with states and levels passes its levels on, checked, to the next stop's file.
    from kcm.checkers.explore import bfs
    from kcm.checkers.explore.stopping import StopRequest

    model, identity = as_explored(load_config("controller"))  # the command's model writes the source
    monkeypatch.setattr(level_loop, "STORE_BELOW", 10)  # the periodic checkpoints store no states
    source = _partial(tmp_path, capsys, states=2000)
    assert "states.ends" not in checkpoint.load(source, identity).arrays
    real = level_loop.LocalBooks.add
    for n in range(2):
        stop, added = StopRequest(), []

        def add(self, level, stop=stop, added=added):
            real(self, level)
            added.append(1)
            if len(added) == 2:  # two levels after the resumed one: stop there
                stop.request("a test")

        monkeypatch.setattr(level_loop.LocalBooks, "add", add)
        nxt = tmp_path / f"stop-{n}.ckpt"
        cut = bfs.explore(model, resume=checkpoint.load(source, identity), stop=stop,
                          checkpoint=checkpoint.Checkpointer(nxt, 1e9, identity))
        assert stop.acted and not cut.complete
        snap = checkpoint.load(nxt, identity)
        assert "states.ends" in snap.arrays and np.array_equal(snap.arrays["levels"], _levels_of(model, snap))
        source = nxt


def test_levels_that_do_not_fit_are_refused_by_the_local_engine_too(tmp_path, capsys):
    ckpt = _partial(tmp_path, capsys)

    def moved(arrays):
        levels = arrays["levels"].copy()
        levels[np.flatnonzero(levels == 1)[0]] = 2
        arrays["levels"] = levels

    _rewrite(ckpt, moved)
    said = _refused(["--config", "controller", "--resume", str(ckpt)], capsys)
    assert "the stored levels do not fit the visited set (the visited fingerprints' levels do not have" in said

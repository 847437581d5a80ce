"""What a Spark task runs on its share of a level: check each frontier state, expand it, send its successors.

It is the Spark engine's hot path in the Python workers (and in the driver for the small levels), so it is a module
of its own that the compiled build compiles with the explorers' other hot paths; `spark_bfs` holds the search
around it. Fingerprints travel as Spark longs: see `to_long` and `order_key`.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

from kcm.checkers.explore.collector import no_collections
from kcm.checkers.explore.verdicts import indexed_successors, state_checks, step_checks

TWO63 = 1 << 63
TWO64 = 1 << 64
NAMES = ["fp", "pkey", "aidx", "parent", "state"]  # the frontier's columns, as the expansion sends them
MAX_LINK = (TWO63, 0)  # above every (order key, action position)


def to_long(fp: int) -> int:
    """The signed 64-bit value with the bits of the unsigned fingerprint `fp` (how Spark stores it)."""
    return fp - TWO64 if fp >= TWO63 else fp


def to_fp(value: int) -> int:
    """The unsigned fingerprint stored as the long `value`."""
    return value + TWO64 if value < 0 else value


def order_key(value: int) -> int:
    """A long whose signed order is the unsigned order of the fingerprint stored as `value`."""
    return value - TWO63 if value >= 0 else value + TWO63


class Witnesses:
    """The least witness per property seen so far in one expansion: name -> (order tuple, payload)."""

    def __init__(self) -> None:
        self.best: dict[str, tuple[tuple[int, int], list[int]]] = {}

    def offer(self, name: str, order: tuple[int, int], payload: list[int]) -> None:
        """Keep this witness of `name` if it comes before the one kept."""
        old = self.best.get(name)
        if old is None or order < old[0]:
            self.best[name] = (order, payload)


class StateJudge:
    """The verdicts of a task's frontier states, each judged as it is expanded: the properties reached and the
    least witness, by (parent order key, action position), of each property broken and each goal reached."""

    def __init__(self, model: Any, state_props: list[Any]) -> None:
        self.model, self.props = model, state_props
        self.expanded = 0
        self.reached: set[str] = set()
        self.bad, self.goal = Witnesses(), Witnesses()

    def judge(self, state: Any, fp: int, pkey: int, aidx: int) -> None:
        """Check one state (fingerprint `fp` as a long, reached by the link (pkey, aidx))."""
        self.expanded += 1
        bad, hit = state_checks(self.model, state, self.props)
        if hit:
            # A goal reached is still judged in the rest of the task's level: its batches come in no
            # particular order, and the least link reaching it is the path every engine reports. The
            # levels after it no longer judge it (`expander`'s `reached`).
            self.reached.update(hit)
            for name in hit:
                self.goal.offer(name, (pkey, aidx), [fp])
        for name in bad:
            self.bad.offer(name, (pkey, aidx), [fp])

    def summary(self) -> dict[str, Any]:
        """The task's summary of its states alone (no transition taken), as the accumulator takes it."""
        return {"transitions": 0, "expanded": self.expanded, "reached": sorted(self.reached), "reached_step": [],
                "state_bad": {n: [list(o), p] for n, (o, p) in self.bad.best.items()}, "step_bad": {},
                "state_goal": {n: [list(o), p] for n, (o, p) in self.goal.best.items()}, "step_goal": {}}


def judged_states(model: Any, level: int, part: int, sink: Any, search: str, state_props: list[Any],
                  batches: Iterator[Any]) -> Iterator[Any]:
    """Each frontier state of `batches` decoded and judged, in their order; the task's summary goes to `sink` under
    (level, part) once the last one is read (what a checkpoint's storing pass judges on the way)."""
    from kcm.checkers.explore import codec as codecs

    judge = StateJudge(codecs.kept_model(search, model) if search else model, state_props)
    decode = codecs.CODEC.decode
    for batch in batches:
        for fp, pkey, aidx, blob in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                        batch.column(2).to_pylist(), batch.column(4).to_pylist(), strict=True):
            state = decode(blob)
            judge.judge(state, fp, pkey, aidx)
            yield state
    sink.add({(level, part): json.dumps(judge.summary())})


def expansion(model: Any, level: int, part: int, sink: Any, successors: bool, search: str, state_props: list[Any],
              step_props: list[Any], batches: Iterator[Any], coverage: bool = False) -> Iterator[Any]:
    """Check and (unless `successors` is off) expand the frontier states of `batches`; yield their successors.

    Each distinct successor of a batch is sent once, with its least (parent order key, action position), and
    again in a later batch only with a lesser one. The partition's summary (counters, properties reached, least
    witnesses) goes to the accumulator `sink` under (level, part). `search` names the search, so that a Python
    worker expands with the model it kept from the search's earlier tasks (memos warm) instead of the fresh copy
    each task unpickles. With `coverage`, the summary also holds the task's coverage counts (`explore/coverage.py`).
    """
    if not coverage:
        yield from _expansion(model, level, part, sink, successors, search, state_props, step_props, batches, None)
        return
    from kcm.checkers.explore.tally import Tally

    tally = Tally()
    with tally.probing():
        yield from _expansion(model, level, part, sink, successors, search, state_props, step_props, batches, tally)


def _expansion(model: Any, level: int, part: int, sink: Any, successors: bool, search: str, state_props: list[Any],
               step_props: list[Any], batches: Iterator[Any], tally: Any) -> Iterator[Any]:
    """`expansion`, counting into `tally` when there is one."""
    import pyarrow as pa
    from kcm.checkers.explore import codec as codecs

    kept = codecs.kept_model(search, model) if search else model
    fingerprint = kept.fingerprint
    transitions = 0
    judge = StateJudge(kept, state_props)  # the states themselves
    reached_step: set[str] = set()  # by their transitions
    step_bad, step_goal = Witnesses(), Witnesses()  # a transition that breaks each property, reaches each goal
    expand = indexed_successors if tally is None else tally.successors
    sent: dict[int, tuple[int, int]] = {}  # successor long -> the least link this task has sent for it
    codec = codecs.CODEC
    # States form no reference cycles: the collector's scans of the batch's allocations would find nothing.
    # What is left afterwards (the model's memos, the codec's, the driver's rows) is frozen, so that no later
    # scan walks it again (the driver unfreezes it when the search ends).
    with no_collections():
        for batch in batches:
            fps = batch.column(0).to_pylist()
            pkeys = batch.column(1).to_pylist()
            aidxs = batch.column(2).to_pylist()
            blobs = batch.column(4).to_pylist()
            out: dict[int, tuple[int, int, int, Any]] = {}  # successor long -> (pkey, aidx, parent, state)
            for fp, pkey, aidx, blob in zip(fps, pkeys, aidxs, blobs, strict=True):
                state = codec.decode(blob)
                judge.judge(state, fp, pkey, aidx)
                if not successors:
                    continue
                key = order_key(fp)
                for i, action, nxt, effects in expand(kept, state):
                    transitions += 1
                    bad, hit = step_checks(kept, state, action, nxt, effects, step_props)
                    if hit:
                        reached_step.update(hit)
                        for name in hit:
                            step_goal.offer(name, (key, i), [fp, i])
                    for name in bad:
                        step_bad.offer(name, (key, i), [fp, i])
                    nfp = to_long(fingerprint(nxt))
                    old = out.get(nfp)
                    if old is None or key < old[0] or key == old[0] and i < old[1]:
                        out[nfp] = (key, i, fp, nxt)
            # A successor this task sent before with a lesser link loses to it in the JVM's reduction anyway.
            for nfp in [nfp for nfp, row in out.items() if sent.get(nfp, MAX_LINK) <= (row[0], row[1])]:
                del out[nfp]
            if out:
                sent.update((nfp, (row[0], row[1])) for nfp, row in out.items())
                rows = list(out.values())
                yield pa.RecordBatch.from_arrays([
                    pa.array(list(out), pa.int64()), pa.array([r[0] for r in rows], pa.int64()),
                    pa.array([r[1] for r in rows], pa.int32()), pa.array([r[2] for r in rows], pa.int64()),
                    pa.array([codec.encode(r[3]) for r in rows], pa.binary())], names=NAMES)
        gc.freeze()
    summary = judge.summary()
    summary.update(transitions=transitions, reached_step=sorted(reached_step),
                   step_bad={n: [list(o), p] for n, (o, p) in step_bad.best.items()},
                   step_goal={n: [list(o), p] for n, (o, p) in step_goal.best.items()})
    if tally is not None:
        summary["coverage"] = tally.take()
    sink.add({(level, part): json.dumps(summary)})

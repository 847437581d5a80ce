"""Counterexamples as evidence: the state at each step, what each step changed, and why the property broke.

Every engine hands over the same thing, a replayable trace (the actions from the model's initial state), and
this module turns it into evidence: a snapshot of every state (ZooKeeper's znodes, the controller's view, each
broker and its local replicas with their logs, requests in flight, the ghost history the properties read), the
diff of each step (only the entries that changed), the requests each step sent, and the witness.

The witness is computed from the property itself, not from a second copy of its rule: the entries the last step
changed are put back, one at a time, to their value before the step, and the property judged again. The entries
whose old value alone makes the property hold are what breaks it ("acked records of t-0 lost from the leader's
log", "the znode of t-0 written with leader epoch 3"). Where a property declares a helper that names its offenders
(`@rule(..., offenders=...)`: the data-plane record and divergence helpers), what it names is added as detail.
"""

from __future__ import annotations

from typing import Any

from kcm.model.interface import EVENTUALLY, SOMETIMES, SOMETIMES_STEP, STEP, Property
from kcm.model.names import replica_name, tp_name
from kcm.properties import catalogue
from kcm.properties.facts import facts_of

Path = tuple  # (field, ..., [key]) into a Cluster: NamedTuple fields, then at most one key of a frozen map
MISSING = object()

# How a path's first field reads in a report, and which lane of the sequence diagram it belongs to.
GROUPS = {"zk": "ZooKeeper", "ctx": "controller", "brokers": "broker", "replicas": "replica",
          "inflight": "in flight", "ghost": "history", "zombie": "zombie controller"}
ZNODES = {"controller": "/controller", "controller_epoch": "/controller_epoch",
          "controller_epoch_zk_version": "/controller_epoch zkVersion", "brokers": "/brokers/ids",
          "assignments": "/brokers/topics", "partitions": "/brokers/topics/<topic>/partitions",
          "reassign_partitions": "/admin/reassign_partitions", "delete_topics": "/admin/delete_topics",
          "reassign_original": "/brokers/topics (KIP-455 original replicas)"}


# ------------------------------------------------------------------------------------------------ snapshots


def _is_record(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _is_fmap(value: Any) -> bool:
    """Whether a plain tuple is a frozen map (a sorted tuple of (key, value) pairs) rather than a list."""
    return (isinstance(value, tuple) and not _is_record(value) and bool(value)
            and all(isinstance(p, tuple) and not _is_record(p) and len(p) == 2 for p in value))


def key_name(key: Any) -> str:
    """A frozen map's key as Kafka names it: t-0, t-0@2, broker 1 (controller epoch 2), t-0 epoch 3."""
    if isinstance(key, tuple):
        if len(key) == 2 and isinstance(key[0], str):
            return tp_name(key)
        if len(key) == 3 and isinstance(key[0], str):
            return replica_name(key[:2], key[2])  # a replica; ghost.elected's third part is a leader epoch
        if len(key) == 2 and all(isinstance(k, int) for k in key):
            return f"broker {key[0]}, controller epoch {key[1]}"
        return " ".join(str(k) for k in key)
    return str(key)


def plain(value: Any) -> Any:
    """A model value as JSON-ready data: records as objects, frozen maps as objects, tuples as lists."""
    if hasattr(value, "to_json") and _is_record(value):
        return value.to_json()
    if _is_record(value):
        return {f: plain(getattr(value, f)) for f in value._fields}
    if _is_fmap(value):
        return {key_name(k): plain(v) for k, v in value}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def entries(state: Any) -> dict[Path, Any]:
    """The state as entries: each field of the state's records, and each key of a frozen map, on its own."""
    out: dict[Path, Any] = {}

    def walk(path: Path, value: Any, depth: int) -> None:
        if _is_record(value) and depth < 2:
            for f in value._fields:
                walk(path + (f,), getattr(value, f), depth + 1)
        elif _is_fmap(value) and depth >= 1:
            for k, v in value:
                out[path + (k,)] = v
        elif value != () and value is not None or depth == 0:
            out[path] = value

    walk((), state, 0)
    return out


def label(path: Path) -> str:
    """One entry's name for people, e.g. `ZooKeeper /brokers/topics/.../state t-0` or `replica t-0@1`."""
    if not path:
        return "state"  # a model whose state is one plain value
    head, rest = path[0], list(path[1:])
    if head == "zk" and rest:
        field = rest.pop(0)
        if rest and field == "partitions":
            return f"ZooKeeper /brokers/topics/{rest[0][0]}/partitions/{rest[0][1]}/state"
        if rest and field == "assignments":
            return f"ZooKeeper /brokers/topics/{rest[0][0]} partition {rest[0][1]}"
        return " ".join(["ZooKeeper", ZNODES.get(field, field)] + [key_name(k) for k in rest])
    if head in ("brokers", "replicas", "inflight"):
        return f"{GROUPS[head]} {key_name(rest[0])}" if rest else GROUPS[head]
    if path[:2] == ("ghost", "elected") and len(path) == 3:  # (topic, partition, leader epoch) -> leader
        return f"history elected {tp_name(path[2][:2])} epoch {path[2][2]}"
    words = [GROUPS.get(head, head)]
    for k in rest:
        words.append(k.replace("_", " ") if isinstance(k, str) and k.isidentifier() else key_name(k))
    return " ".join(words)


def snapshot(state: Any) -> dict[str, Any]:
    """The state for a report: every entry under its label, as JSON-ready data."""
    return {label(p): plain(v) for p, v in entries(state).items()}


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Only what changed between two snapshots: label -> {"before": ..., "after": ...} (None: absent)."""
    out = {}
    for key in list(before) + [k for k in after if k not in before]:
        old, new = before.get(key), after.get(key)
        if old != new:
            out[key] = change(old, new)
    return out


def change(old: Any, new: Any) -> dict[str, Any]:
    """{"before": old, "after": new}, cut to the fields that differ when both are objects."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = [k for k in list(old) + [k for k in new if k not in old] if old.get(k) != new.get(k)]
        return {"before": {k: old.get(k) for k in keys}, "after": {k: new.get(k) for k in keys}}
    return {"before": old, "after": new}


# ------------------------------------------------------------------------------------------------ witnesses


def _set(value: Any, path: Path, new: Any) -> Any:
    """A copy of value with the entry at path replaced by new (MISSING: removed from its frozen map)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if _is_record(value) and isinstance(head, str) and head in value._fields:
        return value._replace(**{head: _set(getattr(value, head), rest, new)})
    pairs = dict(value)  # a frozen map: head is a key
    if new is MISSING:
        pairs.pop(head, None)
    else:
        pairs[head] = _set(pairs.get(head), rest, new) if rest else new
    return tuple(sorted(pairs.items()))


def judge(prop: Property, model: Any, before: Any, action: Any, after: Any, effects: Any) -> bool:
    """Whether the property holds on this step (a step property) or in its after-state (a state property)."""
    if prop.expectation in (STEP, SOMETIMES_STEP):
        return bool(prop.condition(model, before, action, after, effects))
    return bool(prop.condition(model, after))


def witness(prop: Property, model: Any, before: Any, action: Any, after: Any, effects: Any) -> dict[str, Any]:
    """Why the property fails (a goal is reached) on this step: the changed entries it needs, each with its value
    before and after."""
    goal = prop.expectation in (SOMETIMES, SOMETIMES_STEP)  # judged true where it is reached
    old, new = entries(before), entries(after)
    changed = [p for p in list(old) + [p for p in new if p not in old] if old.get(p, MISSING) != new.get(p, MISSING)]
    needed = []
    for path in changed:
        try:
            restored = _set(after, path, old.get(path, MISSING))
            ok = judge(prop, model, before, action, restored, effects)
        except Exception:  # noqa: BLE001 - a half-restored state may break the property's own assumptions
            continue
        if ok != goal:
            needed.append(path)
    out: dict[str, Any] = {"property": prop.name, "rule": prop.rule}
    verb = "leaves the goal unreached" if goal else "makes the property hold again"
    if needed:
        out["entries"] = [{"what": label(p), **change(plain(old.get(p)), plain(new.get(p)))} for p in needed]
        out["why"] = f"putting back any one of these entries to its value before the step {verb}"
    else:
        whole = "the goal is reached by" if goal else "the property fails on"
        out["entries"] = [{"what": label(p), **change(plain(old.get(p)), plain(new.get(p)))} for p in changed]
        out["why"] = (f"no single entry explains it: {whole} the step as a whole "
                      "(its requests and state changes are in the step)" if changed else
                      "the step changed nothing the property reads")
    facts = facts_of(prop.condition)
    if facts is not None and facts.offenders is not None and prop.expectation not in (STEP, SOMETIMES_STEP):
        out["detail"] = facts.offenders(after)
    return out


# ------------------------------------------------------------------------------------------------ evidence


def _property(model: Any, name: str) -> Property:
    """The model's property of that name (a user's own, a goal's negation), else the catalogue's."""
    for p in model.properties():
        if p.name == name:
            return p
    return catalogue.by_id(name)


def build(model: Any, name: str, actions: list[Any], loop_start: int | None = None,
          setup_steps: int = 0) -> dict[str, Any]:
    """The evidence of one counterexample (or of a path that reaches a goal): replay `actions` from the model's
    initial state.

    `setup_steps` is how many scenario steps come before the trace (a scenario replays the set-up first), so
    that step numbers match the `kcm run` scenario. `loop_start` marks a liveness lasso's loop.
    """
    prop = _property(model, name)
    state = model.init_states()[0]
    snaps = [snapshot(state)]
    steps: list[dict[str, Any]] = []
    before = after = state
    effects: Any = None
    action: Any = None
    for i, action in enumerate(actions):
        before = state
        state, effects = model.step(state, action)
        after = state
        snaps.append(snapshot(state))
        step = action.to_step() if hasattr(action, "to_step") else str(action)
        steps.append({"step": setup_steps + i, "action": step,
                      "requests": [r.to_json() for r in effects.requests],
                      "state_changes": [c.to_json() for c in effects.state_changes],
                      "notes": list(effects.notes),
                      "diff": diff(snaps[-2], snaps[-1])})
    out: dict[str, Any] = {"property": prop.name, "kind": prop.expectation, "rule": prop.rule,
                           "first_step": setup_steps, "initial_state": snaps[0], "steps": steps,
                           "final_state": snaps[-1]}
    if prop.expectation == EVENTUALLY:
        loop = len(actions) if loop_start is None else loop_start
        out["loop_start"] = setup_steps + loop
        why = ("the cluster stays unsettled from here on: no fair step is left" if loop == len(actions) else
               "every state of the loop is unsettled, and the loop repeats forever, fairly")
        if actions:  # what keeps the last state unsettled, found as for a safety property
            out["witness"] = witness(prop, model, before, action, after, effects)
            out["witness"]["why"] = f"{why}; in the last state, {out['witness']['why']}"
            out["witness"]["step"] = setup_steps + len(actions) - 1
        else:
            out["witness"] = {"property": prop.name, "rule": prop.rule, "why": why, "entries": [], "step": None}
    elif actions:
        out["witness"] = witness(prop, model, before, action, after, effects)
        out["witness"]["step"] = setup_steps + len(actions) - 1
    else:
        initial = "reached" if prop.expectation in (SOMETIMES, SOMETIMES_STEP) else "violated"
        out["witness"] = {"property": prop.name, "rule": prop.rule, "why": f"{initial} in the initial state",
                          "entries": [], "step": None}
    return out


def step_line(step: dict[str, Any], limit: int = 6) -> list[str]:
    """A step of the evidence in a few text lines: the action, then at most `limit` changed entries."""
    act = step["action"]
    args = ", ".join(f"{k}={json_short(v)}" for k, v in act.items() if k != "op") if isinstance(act, dict) else ""
    op = act.get("op") if isinstance(act, dict) else act
    lines = [f"{step['step']:3}. {op}({args})" + (f"  [{len(step['requests'])} requests]" if step["requests"] else "")]
    items = list(step["diff"].items())
    for key, change in items[:limit]:
        lines.append(f"       {key}: {json_short(change['before'])} -> {json_short(change['after'])}")
    if len(items) > limit:
        lines.append(f"       ... and {len(items) - limit} more changes (--json or --html for all)")
    return lines


def json_short(value: Any, width: int = 70) -> str:
    """A compact one-line rendering of a value, cut at `width` characters."""
    import json

    text = "-" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= width else text[:width - 3] + "..."


def text(evidence: dict[str, Any], limit: int = 6) -> list[str]:
    """The compact text form: the rule, the steps with their diffs, the witness."""
    lines = [f"    rule: {evidence['rule']}"]
    for step in evidence["steps"]:
        mark = "   <- the loop starts here" if evidence.get("loop_start") == step["step"] else ""
        first, *rest = step_line(step, limit)
        lines += ["    " + first + mark] + ["    " + r for r in rest]
    w = evidence["witness"]
    where = f" (step {w['step']})" if w.get("step") is not None else ""
    lines.append(f"    witness{where}:")
    for d in w.get("detail", [])[:limit]:
        lines.append(f"      {json_short(d, 110)}")
    lines.append(f"      {w['why']}:" if w["entries"] else f"      {w['why']}")
    for e in w["entries"][:limit]:
        lines.append(f"      {e['what']}: {json_short(e['before'], 100)} -> {json_short(e['after'], 100)}")
    return lines


__all__ = ["build", "diff", "snapshot", "text", "witness"]

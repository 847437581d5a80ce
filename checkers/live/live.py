"""Live mode: the reference controller's scenario run with every ZooKeeper effect mirrored on a real server.

The reference controller (`kcm.reference.api`) stays the only source of the controller's logic. After each step
it takes, this engine lays the new `Zk` record out as Kafka's znodes (`kcm.model.znodes.layout`) and makes the
real server match it with the operations Kafka performs: brokers register ephemeral znodes in their own sessions;
a failed broker's session is expired for real; a resigning controller's /controller is deleted; an election is a
transaction that creates /controller and sets /controller_epoch conditionally; every partition state write is
conditional on the zkVersion the writer read and, for controller writes (since KAFKA-6082's fix), is one
transaction with a check of the /controller_epoch zkVersion the controller was elected with. Each operation's
outcome is predicted with the ZooKeeper model (`kcm.model.zookeeper`) and compared with the server's answer, and
after each step the server's whole tree (data, versions, ephemeral owners) is compared with the model's.

A step the model refuses with StaleControllerEpoch (a zombie controller's write) is sent to the server as the
writer would send it (computed by the same model with the fence switched off), and ZooKeeper decides: its
BadVersion on /controller_epoch is what refuses the step in the live run. Requests to brokers stay simulated.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from kcm.checkers.core.scenario import RunOutcome, run
from kcm.checkers.live.zk_server import LiveError, Server, Session
from kcm.model import actions as A
from kcm.model import zookeeper as zkm
from kcm.model.cluster import Cluster, ClusterConfig, ControllerContext, initial_cluster
from kcm.model.effects import Effects
from kcm.model.errors import KcmError, StaleControllerEpoch, StaleZkVersion
from kcm.model.txn import Txn
from kcm.model.znodes import CONTROLLER, CONTROLLER_EPOCH, Layout, is_partition_state, layout, state_path
from kcm.reference import api, dataplane

ADMIN = "admin"  # the session of the admin tools (topic creation, reassignment and deletion requests)
# Steps whose partition state writes are the leader's (ISR changes), not the controller's.
_DATA_PLANE = (A.Produce, A.Replicate, A.IsrShrink, A.Consume)
_UNFENCED = "KAFKA-6082"
# The watches Kafka's controller keeps (path, on its children?) and the one every broker keeps on /controller.
CONTROLLER_WATCHES = (("/brokers/ids", True), ("/brokers/topics", True), ("/admin/delete_topics", True),
                      ("/admin/reassign_partitions", False), (CONTROLLER, False))
BROKER_WATCHES = ((CONTROLLER, False),)  # the variant that takes the /controller_epoch check out of controller writes


class LiveEngine:
    """`start` and `step` as `kcm.reference.api` has them, each step's ZooKeeper effects mirrored on the server."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.model = zkm.empty()  # the ZooKeeper model's prediction of the server's tree
        self.sessions: dict[Any, tuple[int, Session]] = {}  # broker id or ADMIN -> (model session, real session)
        self.step_index = -1  # -1: the start (registrations and first election)
        self.writes = 0
        self.notifications: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []
        self.differences: list[str] = []

    # -- sessions ---------------------------------------------------------------------------------

    def _open(self, who: Any) -> None:
        self.model, sid = zkm.open_session(self.model)
        name = "the admin client" if who == ADMIN else f"broker {who}"
        self.sessions[who] = (sid, self.server.open(name))

    def _expire(self, broker: int) -> None:
        sid, real = self.sessions.pop(broker)
        self.model = zkm.expire(self.model, sid)
        self.server.expire(real)

    # -- operations ---------------------------------------------------------------------------------

    def _apply(self, who: Any, ops: list[tuple], as_multi: bool) -> tuple[str, int] | None:
        """Predict ops on the model, perform them on the server, record any disagreement; the server's answer."""
        if who not in self.sessions:
            who = ADMIN
        sid, real = self.sessions[who]
        try:
            if as_multi:
                model = zkm.multi(self.model, sid, ops)
            else:
                model = self.model
                for op in ops:
                    model = zkm.multi(model, sid, [op])
            expected = None
        except zkm.ZooKeeperError as err:
            expected, model = (err.name, getattr(err, "index", 0)), None
        answer = real.run(ops, as_multi)
        self.writes += len(ops)
        if answer != expected:
            self.differences.append(f"step {self.step_index}: {_describe(ops)}: ZooKeeper answered "
                                    f"{_outcome(answer)}, the model predicted {_outcome(expected)}")
        if answer is None and model is not None:
            self.model = model
        elif answer is None:
            # The server did what the model refused: follow the server, without the refused check.
            for op in ops:
                if op[0] != "check":
                    self.model = zkm.multi(self.model, sid, [op])
        return answer

    def _mirror(self, target: dict[str, Layout], writer: ControllerContext | None, fenced: bool,
                session: Any) -> None:
        """Make the server's tree match target, as the writer's operations would (see the module's text)."""
        current = dict(self.model.nodes)
        owners = {sid: who for who, (sid, _) in self.sessions.items()}

        def owner_of(path: str) -> Any:
            """Who owns the ephemeral znode at path now (None: persistent or absent)."""
            node = current.get(path)
            return None if node is None or node.owner == zkm.PERSISTENT else owners.get(node.owner, "gone")

        # Znodes to go: gone from the target, or ephemerals whose owner changed (re-created below).
        gone = [p for p in current if p != "/" and (p not in target or owner_of(p) != target[p].owner)]
        if CONTROLLER in gone:  # /controller first: it is how every broker learns the controller resigned
            self._apply(ADMIN, [("delete", CONTROLLER, current[CONTROLLER].version)], False)
            gone.remove(CONTROLLER)
        # Parents before children; an election before the writes the new controller makes under its epoch.
        new = sorted((p for p in target if p not in current or p in gone), key=lambda p: (p != CONTROLLER, p))
        for path in sorted(gone, reverse=True):  # children before parents
            node = self.model.node(path)
            if node is None:
                continue  # an ephemeral gone with its session already
            if node.owner != zkm.PERSISTENT:
                # Kafka never deletes a broker's registration: it goes when the session ends, which the step did not.
                self.differences.append(f"step {self.step_index}: the model removes {path} while the session of "
                                        f"broker {owner_of(path)} that owns it is open")
            self._apply(ADMIN, [("delete", path, node.version)], False)
        epoch = dict(self.model.nodes).get(CONTROLLER_EPOCH)
        for path in new:
            want = target[path]
            if want.owner is not None and want.owner not in self.sessions:
                # An ephemeral znode lives only as long as its owner's session: the model keeps one ZooKeeper
                # would have removed (or one for a broker that never opened a session).
                self.differences.append(f"step {self.step_index}: the model has {path}, ephemeral to broker "
                                        f"{want.owner}, which has no ZooKeeper session")
                continue
            create = ("create", path, want.data, want.owner is not None)
            if path == CONTROLLER and epoch is not None and target[CONTROLLER_EPOCH].version is not None \
                    and target[CONTROLLER_EPOCH].version > epoch.version:
                # Kafka's election: one transaction creates /controller and bumps /controller_epoch conditionally.
                self._apply(want.owner, [create, ("set", CONTROLLER_EPOCH, target[CONTROLLER_EPOCH].data,
                                                  epoch.version)], True)
                continue
            self._apply(want.owner if want.owner is not None else session,
                        self._fence([create], writer, fenced, path), fenced and is_partition_state(path))
            if want.version:
                self._sets(path, want, want.version, writer, fenced, session)
        for path in sorted(target, key=lambda p: (p != CONTROLLER_EPOCH, p)):  # the epoch before fenced writes
            if path in new:
                continue
            node = dict(self.model.nodes)[path]
            want = target[path]
            if want.version is not None:
                if want.version < node.version or (want.version == node.version and want.data != node.data):
                    self.differences.append(f"step {self.step_index}: {path}: the model has version {want.version} "
                                            f"and data {want.data!r}, ZooKeeper has version {node.version}")
                    continue
                self._sets(path, want, want.version - node.version, writer, fenced, session)
            elif want.data != node.data:
                self._sets(path, want, 1, writer, fenced, session)

    def _sets(self, path: str, want: Layout, count: int, writer: ControllerContext | None, fenced: bool,
              session: Any) -> None:
        """`count` conditional sets of path (the model made that many writes in the step; the last data counts)."""
        for _ in range(count):
            version = dict(self.model.nodes)[path].version
            ops = self._fence([("set", path, want.data, version)], writer, fenced, path)
            self._apply(session, ops, len(ops) > 1)

    def _fence(self, ops: list[tuple], writer: ControllerContext | None, fenced: bool, path: str) -> list[tuple]:
        """A controller's write of a partition state znode goes with a check of its /controller_epoch zkVersion."""
        if fenced and writer is not None and writer.controller_id >= 0 and is_partition_state(path):
            return [("check", CONTROLLER_EPOCH, writer.epoch_zk_version), *ops]
        return ops

    # -- the engine's entry points --------------------------------------------------------------------

    def start(self, config: ClusterConfig) -> tuple[Cluster, Effects]:
        """Register every broker (each its own session), then mirror the reference's first election."""
        self._open(ADMIN)
        for b in sorted(config.brokers):
            self._open(b)
        base = initial_cluster(config)
        self._mirror(layout(base.zk), None, False, ADMIN)
        state, effects = api.start(config)
        self._mirror(layout(state.zk), state.ctx, not config.has(_UNFENCED), state.zk.controller)
        self._compare(state)
        self._watch(state)
        self.step_index = 0
        return state, effects

    def step(self, config: ClusterConfig, state: Cluster, action: Any) -> tuple[Cluster, Effects]:
        """The reference's step, its ZooKeeper effects mirrored; a zombie's write is refused by ZooKeeper itself."""
        try:
            try:
                after, effects = api.step(config, state, action)
            except StaleControllerEpoch as err:
                after, effects = self._fenced_attempt(config, state, action, err)
            except StaleZkVersion as err:
                self._stale_leader_write(config, state, action, err)
                raise
            self._moved_controllers_write(config, state, action, after)
            self._sessions_for(action, state, after)
            if isinstance(action, (A.ControllerResign, A.ControllerMove)) and self.model.node(CONTROLLER) is not None:
                # The controller resigns by deleting /controller (its session stays); the winner creates it anew.
                self._apply(ADMIN, [("delete", CONTROLLER, self.model.node(CONTROLLER).version)], False)
            fenced = not config.has(_UNFENCED) and not isinstance(action, _DATA_PLANE)
            if isinstance(action, _DATA_PLANE):
                session: Any = ADMIN
                for tp, lai in after.zk.partitions:
                    if getattr(action, "tp", None) == tp and lai.leader in self.sessions:
                        session = lai.leader
            else:
                session = after.zk.controller if after.zk.controller in self.sessions else ADMIN
            self._mirror(layout(after.zk), after.ctx, fenced, session)
            self._compare(after)
            self._watch(after)
            return after, effects
        finally:
            self.step_index += 1

    def _fenced_attempt(self, config: ClusterConfig, state: Cluster, action: Any,
                        err: StaleControllerEpoch) -> tuple[Cluster, Effects]:
        """Send the write the model refused to ZooKeeper as the stale controller would; ZooKeeper decides."""
        writer = state.zombie if isinstance(action, A.ZombieElect) or (
            isinstance(action, A.ControllerEvent) and action.zombie) else state.ctx
        if writer is None or writer.controller_id < 0 or config.has(_UNFENCED):
            raise err
        try:
            attempt, effects = api.step(config._replace(variants=config.variants + (_UNFENCED,)), state, action)
        except KcmError:
            raise err from None
        refused = self._send_stale_writes(state, action, attempt, writer, err.name)
        if refused is None:
            raise err
        if not refused:
            return attempt, effects
        code, path, version, epoch = refused
        raise StaleControllerEpoch(f"ZooKeeper refused the write of controller {writer.controller_id} (epoch "
                                   f"{writer.epoch}): {code} on {path} (expected version {version}, the znode is "
                                   f"at {epoch})" if path == CONTROLLER_EPOCH else
                                   f"ZooKeeper refused the write of controller {writer.controller_id}: {code} on "
                                   f"{path}") from None

    def _send_stale_writes(self, state: Cluster, action: Any, attempt: Cluster, writer: ControllerContext,
                           refusal: str) -> tuple | None:
        """Send the partition state writes `attempt` made as `writer` would, fenced by the epoch zkVersion it was
        elected with: None when there is none; () when ZooKeeper accepts them (a difference); else (error, path,
        expected version, /controller_epoch's version) of the refusal, which is recorded."""
        before = dict(state.zk.partitions)
        ops: list[tuple] = [("check", CONTROLLER_EPOCH, writer.epoch_zk_version)]
        target = layout(attempt.zk)
        for tp, lai in attempt.zk.partitions:
            if before.get(tp) != lai:
                cached = dict(writer.leadership).get(tp)
                path = f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state"
                ops.append(("set", path, target[path].data, cached.zk_version if cached else -1))
        if len(ops) == 1:
            return None
        answer = self._apply(writer.controller_id, ops, True)
        if answer is None:
            self.differences.append(f"step {self.step_index}: ZooKeeper accepted controller {writer.controller_id}'s "
                                    f"write that the model refuses ({refusal})")
            return ()
        epoch = dict(self.model.nodes)[CONTROLLER_EPOCH].version
        code, index = answer
        path, version = ops[index][1], ops[index][-1]
        self.refused.append({"step": self.step_index, "op": _op_name(action), "controller": writer.controller_id,
                             "path": path, "error": code, "expected_version": version,
                             "version": epoch if path == CONTROLLER_EPOCH else None})
        return code, path, version, epoch

    def _moved_controllers_write(self, config: ClusterConfig, state: Cluster, action: Any, after: Cluster) -> None:
        """A moved controller's event that the model ended at its refused write (it resigned instead of writing):
        the write goes to ZooKeeper as that controller would send it, and ZooKeeper must refuse it too."""
        if not (isinstance(action, A.ControllerEvent) and action.zombie and state.zombie is not None
                and after.zombie is None) or config.has(_UNFENCED):
            return
        try:
            attempt, _ = api.step(config._replace(variants=config.variants + (_UNFENCED,)), state, action)
        except KcmError:
            return
        self._send_stale_writes(state, action, attempt, state.zombie, "ControllerMovedException")

    def _stale_leader_write(self, config: ClusterConfig, state: Cluster, action: Any, err: StaleZkVersion) -> None:
        """A leader's ISR write the model refuses for its stale zkVersion: its condition is sent to ZooKeeper.

        The leader is the one the model's data plane acts as (`acting_leader`); the version is the one its last
        LeaderAndIsr told it. The condition goes as a version check, which is what ZooKeeper evaluates first for
        the conditional set; ZooKeeper must refuse it with BadVersion too.
        """
        tp = getattr(action, "tp", None)
        if tp is None:
            return
        try:
            leader = dataplane.acting_leader(Txn(config, state), tp)
        except KcmError:
            return
        believed = dict(state.replicas)[(tp[0], tp[1], leader)].zk_version
        path = state_path(tp)
        answer = self._apply(leader, [("check", path, believed)], True)
        if answer is None:
            self.differences.append(f"step {self.step_index}: ZooKeeper accepted broker {leader}'s ISR write at "
                                    f"zkVersion {believed}, which the model refuses ({err.name})")
            return
        self.refused.append({"step": self.step_index, "op": _op_name(action), "broker": leader, "path": path,
                             "error": answer[0], "expected_version": believed,
                             "version": dict(self.model.nodes)[path].version})

    def _watch(self, state: Cluster) -> None:
        """Compare the notifications each session received with the model's, then leave Kafka's watches again."""
        for who, (sid, real) in sorted(self.sessions.items(), key=lambda kv: str(kv[0])):
            self.model, expected = zkm.read_events(self.model, sid)
            got = real.read_events()
            self.notifications += [{"step": self.step_index, "to": "admin" if who == ADMIN else who, "event": e,
                                    "path": p} for e, p in sorted(got)]
            if sorted(expected) != sorted(got):
                self.differences.append(f"after step {self.step_index}: {real.name} was notified of {sorted(got)}, "
                                        f"the model says {sorted(expected)}")
            if who == ADMIN:
                continue
            for path, children in CONTROLLER_WATCHES if who == state.zk.controller else BROKER_WATCHES:
                try:
                    self.model = zkm.watch(self.model, sid, path, children)
                    expected_answer = None
                except zkm.ZooKeeperError as e:
                    expected_answer = e.name
                answer = real.watch(path, children)
                if answer != expected_answer:
                    self.differences.append(f"after step {self.step_index}: watch on {path} by {real.name}: "
                                            f"ZooKeeper answered {answer or 'ok'}, the model {expected_answer or 'ok'}")

    def _sessions_for(self, action: Any, before: Cluster, after: Cluster) -> None:
        """The session events of an accepted step: expiries for real, new sessions for (re)registrations."""
        alive_before = {b for b, s in before.brokers if s.alive}
        alive_after = {b for b, s in after.brokers if s.alive}
        for b in sorted(alive_before - alive_after):
            if b in self.sessions:
                self._expire(b)
        if isinstance(action, (A.BrokerBounce, A.SessionExpiry)) and action.broker in self.sessions:
            self._expire(action.broker)
        for b in sorted(alive_after):
            if b not in self.sessions:
                self._open(b)

    def _compare(self, state: Cluster) -> None:
        """The server's tree against the model's, and the versions the controller's record carries."""
        sid_of = {sid: who for who, (sid, _) in self.sessions.items()}
        real_of = {s.session_id: who for who, (_, s) in self.sessions.items()}
        model = {p: (z.data, z.version, z.cversion, sid_of.get(z.owner)) for p, z in self.model.nodes}
        real = {p: (d, v, c, real_of.get(o)) for p, (d, v, c, o) in
                self.server.snapshot(self.sessions[ADMIN][1]).items()}
        for path in sorted(set(model) | set(real)):
            if model.get(path) != real.get(path):
                self.differences.append(f"after step {self.step_index}: {path}: ZooKeeper has "
                                        f"{_node(real.get(path))}, the model {_node(model.get(path))}")
        for path, want in layout(state.zk).items():
            if want.version is not None and path in real and real[path][1] != want.version:
                self.differences.append(f"after step {self.step_index}: {path}: zkVersion {real[path][1]} on "
                                        f"ZooKeeper, {want.version} in the controller's record")

    def report(self) -> dict[str, Any]:
        """The `zookeeper` part of the live result document."""
        return {"server": self.server.address, "chroot": self.server.chroot, "operations": self.writes,
                "notifications": self.notifications, "refused_writes": self.refused,
                "differences": self.differences}


def _op_name(action: Any) -> str:
    return action.to_step()["op"] if hasattr(action, "to_step") else type(action).__name__


def _describe(ops: list[tuple]) -> str:
    return " + ".join(f"{op[0]} {op[1]}" for op in ops)


def _outcome(answer: tuple[str, int] | None) -> str:
    return "ok" if answer is None else f"{answer[0]} (op {answer[1]})"


def _node(n: tuple | None) -> str:
    if n is None:
        return "no znode"
    data, version, cversion, owner = n
    return f"data {data!r} version {version} cversion {cversion}" + (f" owned by {owner}" if owner else "")


def run_live(doc: dict[str, Any], address: str, trace: bool = False) -> RunOutcome:
    """Run a validated scenario on a real ZooKeeper at address (HOST:PORT); LiveError if it cannot go on.

    The run's znodes live under a fresh chroot that is deleted at the end, whatever happens (a SIGTERM included).
    The simulated run of the same scenario is made too, and any field where the two result documents differ is
    listed with ZooKeeper's differences.
    """
    previous = _exit_on_sigterm()
    try:
        server = Server(address)
        try:
            engine = LiveEngine(server)
            outcome = run(doc, trace=trace, engine=engine)
            report = engine.report()
        finally:
            server.close()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    simulated = run(doc, trace=trace).result
    for key in sorted(set(simulated) | set(outcome.result)):
        live_value, plain = outcome.result.get(key), simulated.get(key)
        if key == "log" and live_value is not None and plain is not None:
            # A step ZooKeeper refused names ZooKeeper in its message; the rest of the log must be the same.
            steps = {r["step"] for r in report["refused_writes"]}
            live_value, plain = ([{k: v for k, v in e.items() if not (k == "message" and e["step"] in steps)}
                                  for e in log] for log in (live_value, plain))
        if live_value != plain:
            report["differences"].append(f"the result's {key!r} differs from the simulated run's")
    outcome.result["zookeeper"] = report
    outcome.mismatches += [f"zookeeper: {d}" for d in report["differences"]]
    return outcome


def _exit_on_sigterm() -> Any:
    """Make SIGTERM unwind the run (so its sessions close and its chroot goes); the previous handler, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, stop)


__all__ = ["LiveEngine", "LiveError", "run_live"]

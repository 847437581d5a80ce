"""A small ZooKeeper-mode controller, written the way a team outside kcm might write one.

It keeps everything in plain dicts, runs one operation at a time and records what it did as trace events
(kcm's trace format). Refused operations raise `Refused` and the caller throws the step's changes away.
`bugs` switches on mistakes on purpose, so that a conformance run has something to find (see BUGS).
"""

from __future__ import annotations

import copy
from typing import Any

NONEXISTENT_P, NEW_P, ONLINE_P, OFFLINE_P = "NonExistentPartition", "NewPartition", "OnlinePartition", \
    "OfflinePartition"
NONEXISTENT_R, NEW_R, ONLINE_R, OFFLINE_R = "NonExistentReplica", "NewReplica", "OnlineReplica", "OfflineReplica"
DEL_STARTED, DEL_DONE, DEL_INELIGIBLE = "ReplicaDeletionStarted", "ReplicaDeletionSuccessful", \
    "ReplicaDeletionIneligible"

# target state -> the states a move into it may start from
PARTITION_MOVES = {NEW_P: {NONEXISTENT_P}, ONLINE_P: {NEW_P, ONLINE_P, OFFLINE_P}, OFFLINE_P: {NEW_P, ONLINE_P},
                   NONEXISTENT_P: {OFFLINE_P}}
REPLICA_MOVES = {NEW_R: {NONEXISTENT_R}, ONLINE_R: {NEW_R, ONLINE_R, OFFLINE_R, DEL_INELIGIBLE},
                 OFFLINE_R: {NEW_R, ONLINE_R, OFFLINE_R, DEL_INELIGIBLE}, DEL_STARTED: {OFFLINE_R},
                 DEL_DONE: {DEL_STARTED}, DEL_INELIGIBLE: {DEL_STARTED}, NONEXISTENT_R: {DEL_DONE}}
KAFKA_EXTRA_PARTITION = {OFFLINE_P: {OFFLINE_P}}
KAFKA_EXTRA_REPLICA = {DEL_INELIGIBLE: {OFFLINE_R}}

BUGS = {
    "no-leader-epoch-bump": "a leader election keeps the old leader epoch",
    "leader-outside-isr": "a new topic's first assigned replica leads even when it is down (outside the ISR)",
    "stale-controller-epoch": "after a failover, writes still carry the first controller's epoch",
    "zkversion-not-advanced": "ISR-only writes reuse the znode's zkVersion",
    "illegal-state-move": "a new partition goes NonExistentPartition -> OnlinePartition directly",
    "divergent-election": "the offline election picks the last live ISR replica instead of the first",
    "unclean-when-disabled": "with the whole ISR down, a live replica outside it is elected anyway",
    "isr-emptied": "the controller removes the last ISR member too, leaving the ISR empty",
    "no-controller-epoch-bump": "a new controller keeps the previous controller epoch",
    "shutdown-keeps-isr": "a controlled shutdown leaves the broker in the ISR of partitions it follows",
    "preferred-ignores-isr": "a preferred election elects the first replica whenever it is up, in the ISR or not",
}


class Refused(Exception):
    """The operation was refused; `name` is the error name of the scenario contract."""

    def __init__(self, name: str, text: str) -> None:
        super().__init__(text)
        self.name = name


def pname(p: tuple[str, int]) -> str:
    """'topic-N' for a partition key."""
    return f"{p[0]}-{p[1]}"


class Controller:
    """The whole cluster as this team models it: brokers, ZooKeeper's znodes and the controller's memory."""

    def __init__(self, brokers: list[int], first: int | None = None, unclean: bool = False, rules: str = "seeds",
                 bugs: set[str] | frozenset[str] = frozenset(), min_isr: int = 1,
                 truncation: str = "high_watermark") -> None:
        self.registered = sorted(brokers)
        self.min_isr = min_isr
        self.truncation = truncation  # how a follower finds where its log parts from its leader's
        self.live = set(brokers)
        self.shutting: set[int] = set()
        self.unclean = unclean
        self.bugs = set(bugs)
        self.pmoves = {k: set(v) for k, v in PARTITION_MOVES.items()}
        self.rmoves = {k: set(v) for k, v in REPLICA_MOVES.items()}
        if rules == "kafka":
            for k, v in KAFKA_EXTRA_PARTITION.items():
                self.pmoves[k] |= v
            for k, v in KAFKA_EXTRA_REPLICA.items():
                self.rmoves[k] |= v
        self.zk_assignment: dict[tuple[str, int], list[int]] = {}
        self.zk_state: dict[tuple[str, int], dict[str, Any]] = {}  # leader, leader_epoch, isr, zk_version
        self.controller = -1
        self.controller_epoch = 0
        self.write_epoch = 0  # the controller epoch this controller puts in its writes
        self.assignment: dict[tuple[str, int], list[int]] = {}
        # reassignments in flight: partition -> (original replicas, target replicas), in ZooKeeper and in memory
        self.zk_moving: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
        self.moving: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
        # what each broker was last told of a partition it hosts (leader, leader_epoch, isr, zk_version, replicas)
        # and its log of it: the leader epoch of each record, its high watermark, and as leader its followers' LEOs
        self.view: dict[tuple[tuple[str, int], int], dict[str, Any]] = {}
        self.zk_deleting: set[str] = set()  # /admin/delete_topics
        self.deleting: set[str] = set()  # what the controller is deleting
        self.waiting: set[str] = set()  # deletions that wait (a replica's broker is down, or a reassignment)
        self.pstate: dict[tuple[str, int], str] = {}
        self.rstate: dict[tuple[tuple[str, int], int], str] = {}
        self.events: list[dict[str, Any]] = [{"type": "broker_up", "broker": b} for b in self.registered]
        self.elect_controller(first)

    # ------------------------------------------------------------------ helpers
    def emit(self, kind: str, **fields: Any) -> None:
        """Record one trace event."""
        self.events.append({"type": kind, **fields})

    def snapshot(self) -> dict[str, Any]:
        """Everything, to put back if a step is refused."""
        return copy.deepcopy(self.__dict__)

    def restore(self, saved: dict[str, Any]) -> None:
        """Put back what snapshot() took."""
        self.__dict__.clear()
        self.__dict__.update(saved)

    def eligible(self) -> set[int]:
        """Brokers that may lead: up and not shutting down."""
        return self.live - self.shutting

    def move_partition(self, p: tuple[str, int], to: str, strict: bool = False) -> bool:
        """Change a partition's state if the table allows it (strict: refuse the step otherwise)."""
        cur = self.pstate.get(p, NONEXISTENT_P)
        if cur not in self.pmoves[to]:
            if strict:
                raise Refused("IllegalStateTransition", f"{pname(p)}: {cur} -> {to}")
            return False
        self.pstate[p] = to
        self.emit("partition_state_change", partition=pname(p), **{"from": cur, "to": to})
        return True

    def move_replica(self, p: tuple[str, int], b: int, to: str, strict: bool = False) -> bool:
        """Change a replica's state if the table allows it (strict: refuse the step otherwise)."""
        cur = self.rstate.get((p, b), NONEXISTENT_R)
        if cur not in self.rmoves[to]:
            if strict:
                raise Refused("IllegalStateTransition", f"{pname(p)}@{b}: {cur} -> {to}")
            return False
        self.rstate[(p, b)] = to
        if to == NONEXISTENT_R:
            del self.rstate[(p, b)]  # a replica that no longer exists is not listed
        self.emit("replica_state_change", partition=pname(p), replica=b, **{"from": cur, "to": to})
        zk = self.zk_state.get(p)
        if zk is not None and ((to == NEW_R and zk["leader"] != b) or (to == ONLINE_R and cur != NEW_R)):
            self.send_leader_and_isr(p, [b])
        elif to == DEL_STARTED:
            self.stop_replica(p, b, delete=True)
        return True

    def write(self, p: tuple[str, int], leader: int, isr: list[int], election: str | None = None,
              leader_write: bool = False) -> None:
        """Write the partition's leader and ISR znode (controller writes bump the leader epoch)."""
        old = self.zk_state[p]
        epoch = old["leader_epoch"]
        if not leader_write and not (election and "no-leader-epoch-bump" in self.bugs):
            epoch += 1
        version = old["zk_version"] + 1
        if "zkversion-not-advanced" in self.bugs and leader == old["leader"] and election is None:
            version = old["zk_version"]
        new = {"leader": leader, "leader_epoch": epoch, "isr": sorted(isr), "zk_version": version}
        self.zk_state[p] = new
        # the znode's replicas are ZooKeeper's assignment (a finishing reassignment changes it last)
        event = dict(new, partition=pname(p), controller_epoch=self.write_epoch,
                     replicas=list(self.zk_assignment[p]))
        if election:
            event["election"] = election
        self.emit("leader_and_isr_write", **event)

    def send_leader_and_isr(self, p: tuple[str, int], brokers: list[int]) -> None:
        """Tell brokers the partition's leader and ISR; a live broker applies it if its leader epoch is newer."""
        zk = self.zk_state.get(p)
        if zk is None:
            return
        ar = list(self.assignment[p])
        state = {"partition": pname(p), "leader": zk["leader"], "leader_epoch": zk["leader_epoch"],
                 "isr": list(zk["isr"]), "zk_version": zk["zk_version"], "replicas": ar}
        for b in brokers:
            if b not in self.live:
                continue
            self.emit("request_sent", request="LeaderAndIsr", broker=b, controller_epoch=self.write_epoch,
                      partitions=[state])
            known = self.view.get((p, b))
            if b not in ar or (known is not None and zk["leader_epoch"] <= known["leader_epoch"]):
                self.emit("request_received", request="LeaderAndIsr", broker=b, controller_epoch=self.write_epoch,
                          partitions=[])  # taken, but nothing in it for this broker
                continue
            mine = self.view.setdefault((p, b), {"log": [], "hw": 0})
            mine.update(leader=zk["leader"], leader_epoch=zk["leader_epoch"], isr=list(zk["isr"]),
                        zk_version=zk["zk_version"], replicas=ar, remote={})
            mine["truncate"] = False
            if zk["leader"] == b:
                self.advance_hw(p, b)
            elif zk["leader"] >= 0 and self.truncation == "high_watermark":  # start again from the HW
                self.cut(mine, mine["hw"])
            elif zk["leader"] >= 0:  # ask the leader where the logs part, at the first fetch
                mine["truncate"] = True
            self.emit("request_received", request="LeaderAndIsr", broker=b, controller_epoch=self.write_epoch,
                      partitions=[state])

    @staticmethod
    def cut(replica: dict[str, Any], offset: int) -> None:
        """Truncate a replica's log to offset (its HW with it)."""
        del replica["log"][max(offset, 0):]
        replica["hw"] = min(replica["hw"], len(replica["log"]))

    @staticmethod
    def epoch_end(log: list[int], asked: int) -> tuple[int, int]:
        """(the largest epoch of the log not above `asked`, the offset where its records end), or (-1, -1)."""
        runs = [(e, o) for o, e in enumerate(log) if o == 0 or log[o - 1] != e]
        for i in range(len(runs) - 1, -1, -1):
            if runs[i][0] <= asked:
                return runs[i][0], runs[i + 1][1] if i + 1 < len(runs) else len(log)
        return -1, -1

    def truncation_point(self, mine: dict[str, Any], theirs: dict[str, Any]) -> int:
        """Where a follower's log parts from its leader's, as the configured truncation finds it."""
        log, hw = mine["log"], mine["hw"]
        if self.truncation == "high_watermark":
            return min(hw, len(log))
        if not log:
            return 0
        last = log[-1]
        if self.truncation == "leader_epoch":  # KIP-101: the leader's end of that epoch
            if last == theirs["leader_epoch"]:
                end = len(theirs["log"])
            else:
                end = next((o for o, e in enumerate(theirs["log"]) if e > last), len(theirs["log"]))
            return min(end, len(log))
        epoch, end = self.epoch_end(theirs["log"], last)  # KIP-279: and the epoch the answer is for
        if epoch < 0:
            return min(hw, len(log))
        own_epoch, own_end = self.epoch_end(log, epoch)
        return min(end, own_end if own_epoch >= 0 else 0)

    def advance_hw(self, p: tuple[str, int], leader: int) -> None:
        """The leader's high watermark moves up to the lowest LEO in its ISR (a follower not heard from counts 0)."""
        mine = self.view[(p, leader)]
        ends = [len(mine["log"]) if b == leader else mine["remote"].get(b, 0) for b in mine["isr"]]
        mine["hw"] = max(mine["hw"], min(ends) if ends else len(mine["log"]))
    def stop_replica(self, p: tuple[str, int], b: int, delete: bool) -> None:
        """The broker stops fetching or leading the partition; with delete it drops its replica."""
        if b not in self.live:
            return
        for kind in ("request_sent", "request_received"):
            self.emit(kind, request="StopReplica", broker=b, controller_epoch=self.write_epoch,
                      partitions=[{"partition": pname(p), "delete": delete}])
        if delete:
            self.view.pop((p, b), None)
        elif (p, b) in self.view:
            self.view[(p, b)]["leader"] = -1

    # ------------------------------------------------------------------ elections
    def choose(self, p: tuple[str, int], selector: str) -> tuple[int, list[int], str] | None:
        """Pick a leader and the new ISR for a partition with one of Kafka's four selectors."""
        ar, isr, ok = self.assignment[p], self.zk_state[p]["isr"], self.eligible()
        if selector == "offline":
            candidates = [b for b in ar if b in ok and b in isr]
            if candidates:
                pick = candidates[-1] if "divergent-election" in self.bugs else candidates[0]
                return pick, [b for b in isr if b in ok], "offline"
            if self.unclean or "unclean-when-disabled" in self.bugs:
                live_ar = [b for b in ar if b in ok]
                if live_ar:
                    return live_ar[0], [live_ar[0]], ("unclean" if self.unclean else "offline")
            return None
        if selector == "preferred":
            if ar and ar[0] in ok and (ar[0] in isr or "preferred-ignores-isr" in self.bugs):
                return ar[0], list(isr), "preferred"
            return None
        if selector == "controlled_shutdown":
            for b in ar:
                if b in isr and b in self.live and b not in self.shutting:
                    return b, [r for r in isr if r not in self.shutting], "controlled_shutdown"
            return None
        for b in ar:  # "reassigned", with no reassignment running: the assignment is the target
            if b in ok and b in isr:
                return b, list(isr), "reassignment"
        return None

    def bring_online(self, p: tuple[str, int], selector: str | None) -> bool:
        """Give a partition a leader: the first write of a new partition, or an election."""
        if self.pstate.get(p) == NEW_P and p not in self.zk_state:
            ar = self.assignment[p]
            up = [b for b in ar if b in self.eligible()]
            if not up:
                return False
            leader = ar[0] if "leader-outside-isr" in self.bugs else up[0]
            self.zk_state[p] = {"leader": leader, "leader_epoch": 0, "isr": sorted(up), "zk_version": 0}
            self.emit("leader_and_isr_write", partition=pname(p), controller_epoch=self.write_epoch,
                      replicas=list(ar), **self.zk_state[p])
            self.send_leader_and_isr(p, up)
            return True
        picked = self.choose(p, selector or "offline")
        if picked is None:
            return False
        self.write(p, picked[0], picked[1], election=picked[2])
        self.send_leader_and_isr(p, self.assignment[p])
        return True

    def online(self, partitions: list[tuple[str, int]], selector: str | None = None) -> None:
        """Move partitions to OnlinePartition where the table allows and a leader can be found."""
        for p in partitions:
            if self.pstate.get(p, NONEXISTENT_P) in self.pmoves[ONLINE_P]:
                if self.bring_online(p, selector):
                    self.move_partition(p, ONLINE_P)

    def retry_offline(self) -> None:
        """Every NewPartition and OfflinePartition gets another try at a leader."""
        self.online([p for p in sorted(self.pstate) if self.pstate[p] in (NEW_P, OFFLINE_P)
                     and p[0] not in self.deleting], "offline")

    def take_offline(self, p: tuple[str, int], b: int) -> None:
        """A replica goes OfflineReplica and out of the ISR (the last member stays)."""
        if not self.move_replica(p, b, OFFLINE_R):
            return
        self.stop_replica(p, b, delete=False)
        cur = self.zk_state.get(p)
        if cur is None:
            return
        if b in cur["isr"] or cur["leader"] == b:
            leader = -1 if cur["leader"] == b else cur["leader"]
            isr = cur["isr"] if len(cur["isr"]) == 1 and "isr-emptied" not in self.bugs else \
                [r for r in cur["isr"] if r != b]
            self.write(p, leader, isr)
        if p[0] not in self.deleting:
            self.send_leader_and_isr(p, [r for r in self.assignment[p] if r != b])

    # ------------------------------------------------------------------ controller election
    def elect_controller(self, wanted: int | None = None) -> None:
        """A new controller wins /controller, loads ZooKeeper and starts both state machines."""
        up = sorted(self.live)
        self.assignment, self.pstate, self.rstate, self.moving = {}, {}, {}, {}
        self.deleting, self.waiting = set(), set()
        if not up:
            self.controller = -1
            return
        self.controller = wanted if wanted in self.live else up[0]
        if "no-controller-epoch-bump" not in self.bugs or self.controller_epoch == 0:
            self.controller_epoch += 1
        if "stale-controller-epoch" not in self.bugs or self.write_epoch == 0:
            self.write_epoch = self.controller_epoch
        self.emit("controller_elected", broker=self.controller, epoch=self.controller_epoch)
        self.assignment = {p: list(ar) for p, ar in self.zk_assignment.items()}
        self.deleting = set(self.zk_deleting)
        for topic in self.deleting:
            mine = [p for p in self.assignment if p[0] == topic]
            if any(p in self.zk_moving or any(b not in self.live for b in self.assignment[p]) for p in mine):
                self.waiting.add(topic)
        dead_replicas = []
        for p in sorted(self.assignment):
            for b in self.assignment[p]:
                if b in self.live:
                    self.rstate[(p, b)] = ONLINE_R
                else:
                    self.rstate[(p, b)] = DEL_INELIGIBLE
                    dead_replicas.append((p, b))
        for p in sorted(self.assignment):  # the new controller tells every live replica what ZooKeeper says
            self.send_leader_and_isr(p, [b for b in self.assignment[p] if b in self.live])
        for p, b in dead_replicas:
            self.take_offline(p, b)
        for p in sorted(self.assignment):
            zk = self.zk_state.get(p)
            if zk is None:
                self.pstate[p] = NEW_P
            elif zk["leader"] in self.eligible():
                self.pstate[p] = ONLINE_P
            else:
                self.pstate[p] = OFFLINE_P
        self.retry_offline()
        self.moving = {p: (list(old), list(new)) for p, (old, new) in self.zk_moving.items()}
        for p in sorted(self.moving):
            if p in self.moving:
                self.reassignment_round(p)
        for topic in sorted(self.deleting):
            self.resume_deletion(topic)

    # ------------------------------------------------------------------ operations
    def check_broker(self, b: int) -> None:
        """Refuse a broker the cluster does not have."""
        if b not in self.registered:
            raise Refused("BrokerNotAvailable", f"broker {b} is not registered")

    def check_partition(self, p: tuple[str, int]) -> None:
        """Refuse a partition that does not exist, or a state machine call without a controller."""
        if p not in self.zk_assignment:
            raise Refused("UnknownTopicOrPartition", f"{pname(p)} does not exist")
        if self.controller < 0:
            raise Refused("BrokerNotAvailable", "no controller")

    def create_topic(self, topic: str, assignment: dict[str, list[int]] | None, count: int, rf: int) -> None:
        """Register a topic's assignment and bring its partitions online."""
        if any(p[0] == topic for p in self.zk_assignment):
            raise Refused("InvalidReplicaAssignment", f"topic {topic} exists")
        if assignment:
            parts = self.checked_assignment(assignment, 0)
        else:
            up = sorted(self.live)
            if count < 1 or rf < 1 or rf > len(up):
                raise Refused("InvalidReplicaAssignment", "bad partition count or replication factor")
            parts = {i: [up[(i + j) % len(up)] for j in range(rf)] for i in range(count)}
        self.new_partitions(topic, parts)

    def add_partitions(self, topic: str, assignment: dict[str, list[int]]) -> None:
        """More partitions for an existing topic, numbered on from its last."""
        mine = [p for p in self.zk_assignment if p[0] == topic]
        if not mine or topic in self.zk_deleting:
            raise Refused("UnknownTopicOrPartition", f"topic {topic} does not exist")
        if any(p[0] == topic for p in self.zk_moving):
            raise Refused("ReassignmentInProgress", f"topic {topic} is being reassigned")
        self.new_partitions(topic, self.checked_assignment(assignment, len(mine)))

    def checked_assignment(self, assignment: dict[str, list[int]], first: int) -> dict[int, list[int]]:
        """The partitions of an explicit assignment, refused unless numbered on from `first` with sound lists."""
        parts = {int(k): list(v) for k, v in assignment.items()}
        if not parts or sorted(parts) != list(range(first, first + len(parts))):
            raise Refused("InvalidReplicaAssignment", f"partitions are not numbered from {first}")
        for replicas in parts.values():
            if not replicas or len(set(replicas)) != len(replicas) or any(b not in self.registered for b in replicas):
                raise Refused("InvalidReplicaAssignment", f"bad replica list {replicas}")
        return parts

    def new_partitions(self, topic: str, parts: dict[int, list[int]]) -> None:
        """Record new partitions in ZooKeeper; the controller takes them New, then Online."""
        new = [(topic, i) for i in sorted(parts)]
        for p in new:
            self.zk_assignment[p] = parts[p[1]]
        if self.controller < 0:
            return
        for p in new:
            self.assignment[p] = list(parts[p[1]])
        if "illegal-state-move" in self.bugs:
            for p in new:
                self.pstate[p] = NEW_P
                if self.bring_online(p, None):
                    self.pstate[p] = ONLINE_P
                    self.emit("partition_state_change", partition=pname(p), **{"from": NONEXISTENT_P,
                                                                               "to": ONLINE_P})
                else:
                    self.pstate[p] = NONEXISTENT_P
                    self.move_partition(p, NEW_P)
        else:
            for p in new:
                self.move_partition(p, NEW_P)
        for p in new:
            for b in self.assignment[p]:
                self.move_replica(p, b, NEW_R)
        self.online([p for p in new if self.pstate[p] == NEW_P])
        for p in new:
            for b in self.assignment[p]:
                self.move_replica(p, b, ONLINE_R)

    def broker_fail(self, b: int) -> None:
        """The broker's session expires."""
        self.check_broker(b)
        if b not in self.live:
            raise Refused("BrokerNotAvailable", f"broker {b} is not live")
        self.go_down(b)
        if b == self.controller:
            self.elect_controller()
            return
        if self.controller >= 0:
            self.handle_failure(b)

    def go_down(self, b: int) -> None:
        """The broker's process stops: as leader it forgets its followers' LEOs."""
        self.live.discard(b)
        self.shutting.discard(b)
        self.emit("broker_down", broker=b)
        for (_, r), known in self.view.items():
            if r == b:
                known["remote"] = {}

    def come_up(self, b: int) -> None:
        """The broker's process starts: it remembers no leadership and recovers its logs."""
        self.live.add(b)
        self.emit("broker_up", broker=b)
        for (_, r), known in self.view.items():
            if r == b:
                known.update(leader=-1, leader_epoch=-1)
                if self.truncation == "high_watermark":
                    self.cut(known, known["hw"])

    def handle_failure(self, b: int) -> None:
        """The controller's side of a broker failure: new leaders, the broker's replicas offline."""
        for p in sorted(self.zk_state):
            if p in self.pstate and self.zk_state[p]["leader"] == b and p[0] not in self.deleting:
                self.move_partition(p, OFFLINE_P)
        self.retry_offline()
        for p in sorted(self.assignment):
            if b in self.assignment[p] and p[0] not in self.deleting:
                self.take_offline(p, b)
        for topic in sorted({p[0] for p in self.assignment if b in self.assignment[p] and p[0] in self.deleting}):
            for p in sorted(q for q in self.assignment if q[0] == topic and b in self.assignment[q]):
                self.move_replica(p, b, DEL_INELIGIBLE)
            self.waiting.add(topic)
            self.resume_deletion(topic)

    def broker_start(self, b: int) -> None:
        """The broker registers again."""
        self.check_broker(b)
        if b in self.live:
            raise Refused("BrokerNotAvailable", f"broker {b} is already live")
        self.come_up(b)
        if self.controller < 0:
            self.elect_controller()
            return
        self.handle_startup(b)

    def broker_bounce(self, b: int) -> None:
        """The broker restarts and registers again before the controller looks: it handles a failure, then a start."""
        self.check_broker(b)
        if b not in self.live:
            raise Refused("BrokerNotAvailable", f"broker {b} is not live")
        if b == self.controller:
            raise Refused("BrokerNotAvailable", f"broker {b} is the controller")
        self.go_down(b)
        if self.controller >= 0:
            self.handle_failure(b)
        self.come_up(b)
        if self.controller >= 0:
            self.handle_startup(b)

    def handle_startup(self, b: int) -> None:
        """The controller's side of a broker start: its replicas online, leaders where missing, work resumed."""
        for p in sorted(self.assignment):
            if b in self.assignment[p]:
                self.move_replica(p, b, ONLINE_R)
        self.retry_offline()
        for p in sorted(self.moving):
            if p in self.moving and b in self.moving[p][1]:
                self.reassignment_round(p)
        for topic in sorted({p[0] for p in self.assignment if b in self.assignment[p] and p[0] in self.deleting}):
            self.waiting.discard(topic)
            self.resume_deletion(topic, despite_reassignment=True)

    def controlled_shutdown(self, b: int) -> None:
        """Move leadership off a broker that is about to stop, and take its follower replicas offline."""
        self.check_broker(b)
        if b not in self.live or self.controller < 0:
            raise Refused("BrokerNotAvailable", f"broker {b} is not live")
        self.shutting.add(b)
        mine = [p for p in sorted(self.assignment) if b in self.assignment[p] and len(self.assignment[p]) > 1
                and p[0] not in self.deleting]
        led = [p for p in mine if p in self.zk_state and self.zk_state[p]["leader"] == b]
        self.online(led, "controlled_shutdown")
        for p in mine:
            if p not in led:
                if "shutdown-keeps-isr" in self.bugs:
                    self.move_replica(p, b, OFFLINE_R)
                else:
                    self.take_offline(p, b)

    def controller_resign(self, b: int) -> None:
        """/controller goes away and a new election runs."""
        if b >= 0 and b not in self.live:
            raise Refused("BrokerNotAvailable", f"broker {b} is not live")
        if not self.live:
            raise Refused("BrokerNotAvailable", "no live broker")
        self.elect_controller(b if b >= 0 else None)

    def preferred_election(self, partitions: list[tuple[str, int]] | None) -> None:
        """Give partitions back to their first assigned replica."""
        if partitions is None:
            partitions = sorted(p for p in self.zk_assignment if p[0] not in self.zk_deleting)
        for p in partitions:
            if p not in self.zk_assignment or p[0] in self.zk_deleting:
                raise Refused("UnknownTopicOrPartition", f"{pname(p)} does not exist")
        if self.controller < 0:
            return
        todo = [p for p in partitions if p in self.zk_state and self.assignment.get(p) and p[0] not in self.deleting
                and self.zk_state[p]["leader"] != self.assignment[p][0]]
        self.online(todo, "preferred")

    def partition_transition(self, partitions: list[tuple[str, int]], target: str, selector: str | None) -> None:
        """One direct call of the partition state machine: all moves or none."""
        for p in partitions:
            self.check_partition(p)
        for p in partitions:
            if target == ONLINE_P:
                if self.pstate.get(p, NONEXISTENT_P) not in self.pmoves[ONLINE_P]:
                    raise Refused("IllegalStateTransition", f"{pname(p)} cannot go online")
                if not self.bring_online(p, selector):
                    raise Refused("NoLeaderAvailable", f"no leader for {pname(p)}")
            self.move_partition(p, target, strict=True)

    def replica_transition(self, replicas: list[tuple[tuple[str, int], int]], target: str) -> None:
        """One direct call of the replica state machine: all moves or none."""
        for p, b in replicas:
            self.check_partition(p)
            self.check_broker(b)
        for p, b in replicas:
            before = self.rstate.get((p, b), NONEXISTENT_R)
            if target == OFFLINE_R:
                if before not in self.rmoves[OFFLINE_R]:
                    raise Refused("IllegalStateTransition", f"{pname(p)}@{b}: {before} -> {target}")
                self.take_offline(p, b)
                continue
            self.move_replica(p, b, target, strict=True)
            if target == ONLINE_R and before == NEW_R and b not in self.assignment[p]:
                self.assignment[p].append(b)
            if target == NONEXISTENT_R and b in self.assignment.get(p, []):
                self.assignment[p].remove(b)

    def delete_topic(self, topic: str) -> None:
        """Queue a topic for deletion; the controller deletes what it can now and the rest when brokers return."""
        if not any(p[0] == topic for p in self.zk_assignment) or topic in self.zk_deleting:
            raise Refused("UnknownTopicOrPartition", f"topic {topic} does not exist")
        self.zk_deleting.add(topic)
        if self.controller >= 0:
            self.deleting.add(topic)
            self.resume_deletion(topic)

    def resume_deletion(self, topic: str, despite_reassignment: bool = False) -> None:
        """Delete the topic's replicas on live brokers; those on dead brokers wait for them."""
        if topic not in self.deleting:
            return
        parts = sorted(p for p in self.assignment if p[0] == topic)
        if not despite_reassignment and any(p in self.moving for p in parts):
            self.waiting.add(topic)
            return
        replicas = [(p, b) for p in parts for b in self.assignment[p]]
        if topic in self.waiting:
            self.retry_waiting(replicas)
            return
        if any(self.pstate.get(p, NONEXISTENT_P) != NONEXISTENT_P for p in parts):
            for p in parts:
                self.move_partition(p, OFFLINE_P)
            for p in parts:
                self.move_partition(p, NONEXISTENT_P)
        on_live = [(p, b) for p, b in replicas if b in self.live]
        on_dead = [(p, b) for p, b in replicas if b not in self.live]
        for p, b in on_dead:
            if self.rstate.get((p, b)) in (NEW_R, ONLINE_R):
                self.take_offline(p, b)
        if OFFLINE_R not in self.rmoves[DEL_INELIGIBLE]:
            for p, b in on_dead:
                if self.rstate.get((p, b)) == OFFLINE_R:
                    self.move_replica(p, b, DEL_STARTED)
        for p, b in on_dead:
            self.move_replica(p, b, DEL_INELIGIBLE)
        retry = [(p, b) for p, b in on_live if self.rstate.get((p, b)) != DEL_DONE]
        for p, b in retry:
            self.take_offline(p, b)
        for p, b in retry:
            self.move_replica(p, b, DEL_STARTED)
        if on_dead:
            self.waiting.add(topic)
        for p, b in on_live:
            self.move_replica(p, b, DEL_DONE)
        if all(self.rstate.get(r) == DEL_DONE for r in replicas):
            self.finish_deletion(topic, parts, replicas)
        else:
            self.retry_waiting(replicas)

    def retry_waiting(self, replicas: list[tuple[tuple[str, int], int]]) -> None:
        """Replicas whose deletion could not run go back to OfflineReplica, once no answer is awaited."""
        if any(self.rstate.get(r) == DEL_STARTED for r in replicas):
            return
        for p, b in replicas:
            if self.rstate.get((p, b)) == DEL_INELIGIBLE:
                self.take_offline(p, b)

    def finish_deletion(self, topic: str, parts: list[tuple[str, int]],
                        replicas: list[tuple[tuple[str, int], int]]) -> None:
        """Every replica is deleted: the topic leaves ZooKeeper and the controller's memory."""
        for p, b in replicas:
            self.move_replica(p, b, NONEXISTENT_R)
        for p in parts:
            if self.pstate.get(p) in (NEW_P, ONLINE_P):
                self.move_partition(p, OFFLINE_P)
        for p in parts:
            self.move_partition(p, NONEXISTENT_P)
        for p in parts:
            for table in (self.zk_assignment, self.zk_state, self.zk_moving, self.assignment, self.pstate,
                          self.moving):
                table.pop(p, None)
        for key in [k for k in self.rstate if k[0][0] == topic]:
            del self.rstate[key]
        for group in (self.zk_deleting, self.deleting, self.waiting):
            group.discard(topic)

    def reassign(self, p: tuple[str, int], target: list[int]) -> None:
        """Move a partition to other replicas: new ones first, then the leader among them, then the old ones go."""
        if p not in self.zk_assignment or p[0] in self.zk_deleting:
            raise Refused("UnknownTopicOrPartition", f"{pname(p)} does not exist")
        if not target or len(set(target)) != len(target) or any(b not in self.registered for b in target):
            raise Refused("InvalidReplicaAssignment", f"bad target {target}")
        if self.controller < 0:
            old = self.zk_moving[p][0] if p in self.zk_moving else list(self.zk_assignment[p])
            self.zk_moving[p] = (old, list(target))
            return
        # A target equal to the current replicas is no move, and completes at once (Kafka 3.8 bumps the epoch).
        old = self.moving[p][0] if p in self.moving else list(self.assignment[p])
        self.moving[p] = self.zk_moving[p] = (old, list(target))
        self.reassignment_round(p)

    def reassignment_round(self, p: tuple[str, int]) -> None:
        """Finish the reassignment if the whole target is in the ISR, else (re)start its new replicas."""
        old, target = self.moving[p]
        leaving = [b for b in old if b not in target]
        replicas = target + leaving
        before = self.assignment[p]
        if before != replicas:
            self.zk_assignment[p], self.assignment[p] = list(replicas), list(replicas)
            self.remove_replicas(p, [b for b in before if b not in replicas])
        zk = self.zk_state.get(p)
        if set(target) == set(old) or (zk is not None and set(target) <= set(zk["isr"])):
            self.finish_reassignment(p, target, leaving, moved=set(target) != set(old))
            return
        if zk is not None:
            self.write(p, zk["leader"], zk["isr"])
            self.send_leader_and_isr(p, replicas)
        for b in target:
            if b not in old:
                self.move_replica(p, b, NEW_R)

    def finish_reassignment(self, p: tuple[str, int], target: list[int], leaving: list[int],
                            moved: bool = True) -> None:
        """The target replicas take over and the others are removed (`moved`: some replica was added or removed;
        if none was, no replica changes state)."""
        if moved:
            for b in target:
                self.move_replica(p, b, ONLINE_R)
        self.assignment[p] = list(target)
        zk = self.zk_state.get(p)
        if zk is not None:
            if zk["leader"] not in target or zk["leader"] not in self.eligible():
                self.online([p], "reassigned")
            else:
                self.write(p, zk["leader"], zk["isr"])
                self.send_leader_and_isr(p, target)
        self.remove_replicas(p, leaving)
        self.zk_assignment[p] = list(target)
        self.zk_moving.pop(p, None)
        self.moving.pop(p, None)
        if p[0] in self.waiting:
            self.waiting.discard(p[0])
            self.resume_deletion(p[0])

    def remove_replicas(self, p: tuple[str, int], gone: list[int]) -> None:
        """Replicas dropped from a partition go offline, then through deletion."""
        for b in gone:
            self.take_offline(p, b)
        for state in (DEL_STARTED, DEL_DONE, NONEXISTENT_R):
            for b in gone:
                self.move_replica(p, b, state)

    def isr_shrink(self, p: tuple[str, int], b: int) -> None:
        """The leader drops a follower from the ISR (only the zkVersion moves)."""
        leader = self.acting_leader(p)
        known = self.view[(p, leader)]
        if b == leader or b not in known["isr"]:
            raise Refused("NotLeaderOrFollower", f"broker {b} cannot be dropped from {known['isr']}")
        self.leader_isr_write(p, leader, [r for r in known["isr"] if r != b])
        self.advance_hw(p, leader)

    def leader_isr_write(self, p: tuple[str, int], leader: int, isr: list[int]) -> None:
        """The leader's conditional ISR write with its own view; a finished reassignment follows."""
        known = self.view[(p, leader)]
        if known["zk_version"] != self.zk_state[p]["zk_version"]:
            raise Refused("StaleZkVersion", f"broker {leader}'s view of {pname(p)} is out of date")
        self.zk_state[p] = dict(self.zk_state[p], leader_epoch=known["leader_epoch"])
        self.write(p, leader, sorted(isr), leader_write=True)
        self.leader_wrote(p)
        if self.controller >= 0 and p in self.moving and set(self.moving[p][1]) <= set(self.zk_state[p]["isr"]):
            old, new = self.moving[p]
            self.finish_reassignment(p, new, [r for r in old if r not in new])

    def produce(self, p: tuple[str, int], records: int, acks_all: bool) -> None:
        """Append records to the leader's log in its leader epoch."""
        leader = self.acting_leader(p)
        known = self.view[(p, leader)]
        if acks_all and len(known["isr"]) < self.min_isr:
            raise Refused("NotEnoughReplicas", f"ISR {known['isr']} is smaller than {self.min_isr}")
        start = len(known["log"])
        known["log"] += [known["leader_epoch"]] * records
        self.advance_hw(p, leader)
        self.emit("produce", partition=pname(p), broker=leader, offset=start, count=records, leo=len(known["log"]),
                  hw=known["hw"])

    def consume(self, p: tuple[str, int]) -> None:
        """A consumer reads below the leader's high watermark: nothing changes."""
        self.acting_leader(p)

    def leader_wrote(self, p: tuple[str, int]) -> None:
        """The leader keeps its own ISR write in its view."""
        zk = self.zk_state[p]
        known = self.view.get((p, zk["leader"]))
        if known is not None:
            known.update(isr=list(zk["isr"]), zk_version=zk["zk_version"])

    def acting_leader(self, p: tuple[str, int]) -> int:
        """The partition's leader if it is up and knows it leads; refused otherwise."""
        if p not in self.zk_assignment:
            raise Refused("UnknownTopicOrPartition", f"{pname(p)} does not exist")
        zk = self.zk_state.get(p)
        leader = -1 if zk is None else zk["leader"]
        known = self.view.get((p, leader))
        if leader < 0 or leader not in self.live or known is None or known["leader"] != leader:
            raise Refused("NotLeaderOrFollower", f"no broker acts as leader of {pname(p)}")
        return leader

    def replicate(self, p: tuple[str, int], broker: int, fenced_epochs: bool) -> None:
        """One fetch round (logs stay empty here): a follower outside the ISR joins it."""
        leader = self.acting_leader(p)
        followers = sorted(b for (q, b), known in self.view.items()
                           if q == p and b != leader and known["leader"] == leader and b in self.live)
        if broker >= 0:
            if broker not in self.live:
                raise Refused("BrokerNotAvailable", f"broker {broker} is not live")
            if broker not in followers:
                raise Refused("NotLeaderOrFollower", f"broker {broker} does not follow {leader}")
            followers = [broker]
        for b in followers:
            mine, theirs = self.view[(p, b)], self.view[(p, leader)]
            if fenced_epochs and mine["leader_epoch"] != theirs["leader_epoch"]:
                if broker >= 0:
                    raise Refused("FencedLeaderEpoch", f"broker {b} fetched in another leader epoch")
                continue
            if mine.get("truncate"):
                self.cut(mine, self.truncation_point(mine, theirs))
                mine["truncate"] = False
            if len(mine["log"]) > len(theirs["log"]):  # a follower ahead of its leader cuts back to it
                self.cut(mine, len(theirs["log"]))
            offset, hw_before = len(mine["log"]), theirs["hw"]
            theirs["remote"][b] = offset
            self.advance_hw(p, leader)
            mine["log"] += theirs["log"][offset:]
            mine["hw"] = max(mine["hw"], min(hw_before, len(mine["log"])))
            self.emit("fetch", partition=pname(p), broker=b, leader=leader, fetch_offset=offset, leo=len(mine["log"]),
                      hw=mine["hw"], leader_leo=len(theirs["log"]), leader_hw=theirs["hw"])
            epoch_start = next((o for o, e in enumerate(theirs["log"]) if e == theirs["leader_epoch"]),
                               len(theirs["log"]))
            if b in theirs["isr"] or b not in theirs["replicas"] or offset < theirs["hw"] or offset < epoch_start:
                continue
            try:
                self.leader_isr_write(p, leader, theirs["isr"] + [b])
            except Refused:
                continue  # the leader's view is stale: its conditional write fails and it tries again later

    # ------------------------------------------------------------------ result
    def result(self) -> dict[str, Any]:
        """The contract's result document of the cluster as it is now."""
        parts = {}
        for p in sorted(set(self.zk_assignment) | set(self.pstate) | set(self.assignment)):
            zk = self.zk_state.get(p)
            parts[pname(p)] = {
                "state": self.pstate.get(p, NONEXISTENT_P),
                "replicas": list(self.assignment.get(p, self.zk_assignment.get(p, []))),
                "leader": zk["leader"] if zk else -1, "leader_epoch": zk["leader_epoch"] if zk else -1,
                "isr": sorted(zk["isr"]) if zk else [], "hw": 0, "leo": {}}
        return {"controller": {"id": self.controller, "epoch": self.controller_epoch},
                "live_brokers": sorted(self.live), "partitions": parts,
                "replicas": {f"{pname(p)}@{b}": s for (p, b), s in sorted(self.rstate.items())},
                "reassignments": {pname(p): {"adding": [b for b in new if b not in old],
                                             "removing": [b for b in old if b not in new]}
                                  for p, (old, new) in sorted(self.moving.items())}}

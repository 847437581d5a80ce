"""Benchmark of `kcm check-log`: generate a realistic Kafka 2.x state-change.log and time the check.

The log is what broker 1 writes while it is the controller of a 6-broker cluster with 2,000 partitions (replication
factor 3): topic creation, then rounds of a broker failing and coming back (replica state changes, leader elections
with leader-epoch bumps, LeaderAndIsr and UpdateMetadata requests, broker 1's own handling of requests), with
occasional controller re-elections (epoch bumps) and noise: per-request summaries, stack traces, cut lines and
binary garbage. The generated log is legal, so the check must report no violation.

    .venv/bin/python ci/bench_check_log.py [--lines 1000000] [--keep FILE] [--violation]

With --violation one illegal move (OnlinePartition -> NewPartition) is appended as the last line, and the script
says whether the check found it there.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

from kcm.checkers.oracle.log_rules import check_file

SUFFIX = " (state.change.logger)\n"
BROKERS = (1, 2, 3, 4, 5, 6)
LOCAL = 1  # the broker whose log this is; it is also the controller and never fails


class _Writer:
    """Collects generated lines with a clock that advances a few milliseconds per line."""

    def __init__(self, out, rnd: random.Random) -> None:
        self.out = out
        self.rnd = rnd
        self.count = 0
        self.ms = 0
        self.epoch = 1
        self.correlation = 0

    def _ts(self) -> str:
        self.ms += self.rnd.randrange(3)
        s, ms = divmod(self.ms, 1000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return f"[2021-09-20 {h % 24:02d}:{m:02d}:{s:02d},{ms:03d}]"

    def raw(self, text: str) -> None:
        """Write text as is (one or more whole lines)."""
        self.out.write(text)
        self.count += text.count("\n")

    def ctl(self, level: str, msg: str) -> None:
        """Write one controller-side message."""
        self.raw(f"{self._ts()} {level} [Controller id={LOCAL} epoch={self.epoch}] {msg}{SUFFIX}")

    def brk(self, level: str, msg: str) -> None:
        """Write one broker-side message of the local broker."""
        self.raw(f"{self._ts()} {level} [Broker id={LOCAL}] {msg}{SUFFIX}")

    def noise(self) -> None:
        """One piece of what a real state-change.log also holds."""
        r = self.rnd.random()
        if r < 0.4:
            self.brk("INFO", f"Handling LeaderAndIsr request correlationId {self.correlation} from controller "
                             f"{LOCAL} for {self.rnd.randrange(1, 50)} partitions")
        elif r < 0.6:
            self.ctl("ERROR", "Controller 1 epoch 1 failed to change state for partition x-0 from OfflinePartition "
                              "to OnlinePartition")
            self.raw("kafka.common.StateChangeFailedException: Failed to elect leader for partition x-0 under "
                     "strategy OfflinePartitionLeaderElectionStrategy(false)\n"
                     "\tat kafka.controller.ZkPartitionStateMachine.doElectLeaderForPartitions(PartitionStateMachine"
                     ".scala:427)\n\tat scala.collection.immutable.List.foreach(List.scala:333)\n")
        elif r < 0.8:
            cut = f"{self._ts()} TRACE [Controller id={LOCAL} epoch={self.epoch}] Changed state of replica 3 for par"
            self.raw(cut[: self.rnd.randrange(10, len(cut))] + "\n")
        else:
            self.raw("\x00\ufffd garbage after a crash \ufffd\n")


def _body(topic: str, idx: int, epoch: int, leader: int, leader_epoch: int, isr: list[int], zk: int,
          replicas: list[int], new: bool) -> str:
    return (f"LeaderAndIsrPartitionState(topicName='{topic}', partitionIndex={idx}, controllerEpoch={epoch}, "
            f"leader={leader}, leaderEpoch={leader_epoch}, isr={isr}, zkVersion={zk}, replicas={replicas}, "
            f"addingReplicas=[], removingReplicas=[], isNew={'true' if new else 'false'})")


class _Partition:
    __slots__ = ("topic", "idx", "name", "replicas", "leader", "epoch", "isr", "zk")

    def __init__(self, topic: str, idx: int, replicas: list[int]) -> None:
        self.topic, self.idx, self.name, self.replicas = topic, idx, f"{topic}-{idx}", replicas
        self.leader, self.epoch, self.isr, self.zk = replicas[0], 0, list(replicas), 0


def _send(w: _Writer, p: _Partition, to: list[int], new: bool = False) -> None:
    body = _body(p.topic, p.idx, w.epoch, p.leader, p.epoch, p.isr, p.zk, p.replicas, new)
    for b in to:
        kind = "become-leader" if b == p.leader else "become-follower"
        w.ctl("TRACE", f"Sending {kind} LeaderAndIsr request {body} to broker {b} for partition {p.name}")
        if b == LOCAL:
            w.correlation += 1
            w.brk("TRACE", f"Received LeaderAndIsr request {body} correlation id {w.correlation} from controller "
                           f"{LOCAL} epoch {w.epoch}")
            w.brk("TRACE", f"Handling LeaderAndIsr request correlationId {w.correlation} from controller {LOCAL} "
                           f"epoch {w.epoch} starting the {kind} transition for partition {p.name}")
    w.ctl("TRACE", f"Sending UpdateMetadata request UpdateMetadataPartitionState(topicName='{p.topic}', "
                   f"partitionIndex={p.idx}, controllerEpoch={w.epoch}, leader={p.leader}, leaderEpoch={p.epoch}, "
                   f"isr={p.isr}, zkVersion={p.zk}, replicas={p.replicas}, offlineReplicas=[]) to brokers "
                   f"Set(1, 2, 3, 4, 5, 6) for partition {p.name}")


def _state(p: _Partition) -> str:
    return f"LeaderAndIsr(leader={p.leader}, leaderEpoch={p.epoch}, isr=List({', '.join(map(str, p.isr))}), " \
           f"zkVersion={p.zk})"


def generate(out, lines: int, seed: int = 7) -> int:
    """Write a legal state-change log of at least `lines` lines; return how many were written."""
    rnd = random.Random(seed)
    w = _Writer(out, rnd)
    parts = []
    for t in range(200):
        for i in range(10):
            start = rnd.randrange(len(BROKERS))
            parts.append(_Partition(f"topic{t}", i, [BROKERS[(start + k) % len(BROKERS)] for k in range(3)]))
    for p in parts:
        w.ctl("INFO", f"Changed partition {p.name} state from NonExistentPartition to NewPartition with assigned "
                      f"replicas {','.join(map(str, p.replicas))}")
        for r in p.replicas:
            w.ctl("TRACE", f"Changed state of replica {r} for partition {p.name} from NonExistentReplica to NewReplica")
        w.ctl("INFO", f"Changed partition {p.name} from NewPartition to OnlinePartition with state {_state(p)}")
        _send(w, p, p.replicas, new=True)
        for r in p.replicas:
            w.ctl("TRACE", f"Changed state of replica {r} for partition {p.name} from NewReplica to OnlineReplica")
    rounds = 0
    while w.count < lines:
        rounds += 1
        if rounds % 5 == 0:
            w.epoch += 1  # this broker won a controller election again
        dead = rnd.choice(BROKERS[1:])
        hit = [p for p in parts if dead in p.replicas]
        for p in hit:
            if w.count >= lines:
                break
            w.ctl("TRACE", f"Changed state of replica {dead} for partition {p.name} from OnlineReplica to "
                           f"OfflineReplica")
            p.isr = [r for r in p.isr if r != dead] or [r for r in p.replicas if r != dead][:1]
            p.epoch += 1
            p.zk += 1
            if p.leader == dead:
                p.leader = p.isr[0]
                w.ctl("INFO", f"Changed partition {p.name} state from OnlinePartition to OfflinePartition")
                w.ctl("INFO", f"Changed partition {p.name} from OfflinePartition to OnlinePartition with state "
                              f"{_state(p)}")
            _send(w, p, [r for r in p.replicas if r != dead])
            if rnd.random() < 0.1:
                w.noise()
        for p in hit:
            if w.count >= lines:
                break
            w.ctl("TRACE", f"Changed state of replica {dead} for partition {p.name} from OfflineReplica to "
                           f"OnlineReplica")
            p.isr = sorted(set(p.isr) | {dead})
            p.epoch += 1
            p.zk += 1
            _send(w, p, [dead])
            if rnd.random() < 0.1:
                w.noise()
    return w.count


def main(argv: list[str] | None = None) -> int:
    """Generate the log, check it, print lines/s and total seconds."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--keep", help="write the generated log here and keep it")
    ap.add_argument("--violation", action="store_true", help="append one illegal move as the last line")
    args = ap.parse_args(argv)
    path = args.keep or tempfile.mktemp(suffix=".log", prefix="state-change-")
    t0 = time.perf_counter()
    with open(path, "w", encoding="utf-8") as out:
        written = generate(out, args.lines)
        if args.violation:
            out.write(f"[2021-09-21 00:00:00,000] INFO [Controller id={LOCAL} epoch=999] Changed partition topic0-0 "
                      f"state from OnlinePartition to NewPartition{SUFFIX}")
            written += 1
    t1 = time.perf_counter()
    size = os.path.getsize(path)
    try:
        with open(path, "rb") as fh:
            report = check_file(fh)
        t2 = time.perf_counter()
    finally:
        if not args.keep:
            os.unlink(path)
    secs = t2 - t1
    print(f"generated {written} lines ({size / 1e6:.0f} MB) in {t1 - t0:.1f} s")
    print(f"checked: lines read {report.lines_read}, events {report.events}, unknown lines {report.unknown_lines}, "
          f"partitions {report.partitions_seen}, version {report.detected_version}, rules {report.rules}, "
          f"violations {report.violations}, warnings {report.warnings}")
    print(f"check-log: {secs:.1f} s total, {report.lines_read / secs:,.0f} lines/s")
    if args.violation:
        found = report.first_violation is not None and report.first_violation.line == written
        print(f"injected violation at line {written}: {'found' if found else 'NOT found'}")
        return 0 if found else 1
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())

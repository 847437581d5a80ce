"""`kcm run --zookeeper`: live runs equal simulated ones, ZooKeeper fences the zombie, bad input exits 2 cleanly."""

from __future__ import annotations

import argparse
import json
import threading
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from kcm.checkers.core.scenario import parse_text, run
from kcm.checkers.live import live
from kcm.checkers.live.zk_server import LiveError, Session

from kcm.cli import main as cli_main
from tests.live_server import zookeeper_address

SCENARIOS = sorted(Path(str(resources.files("kcm.specs").joinpath("scenarios"))).rglob("*.json"))
ZOMBIE = next(p for p in SCENARIOS if p.name == "zombie-controller-fenced.json")


@pytest.fixture(scope="session")
def zk(request: pytest.FixtureRequest) -> str:
    """HOST:PORT of the live server."""
    return zookeeper_address(request)


def _exists(address: str, path: str) -> bool:
    s = Session(address, "the test")
    try:
        return s.call(s.client.exists, path) is not None
    finally:
        s.close()


def _without_fenced_messages(result: dict[str, Any], refused: list[dict[str, Any]]) -> dict[str, Any]:
    # A step ZooKeeper refused says so in its message; the error name and everything else must be the same.
    steps = {r["step"] for r in refused}
    out = dict(result)
    out["log"] = [{k: v for k, v in e.items() if not (k == "message" and e["step"] in steps)} for e in result["log"]]
    return out


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_live_result_equals_simulated(zk: str, path: Path) -> None:
    """Every library scenario gives the same result document and log live as simulated; ZooKeeper agrees."""
    doc = parse_text(path.read_bytes())
    simulated = run(doc, trace=True)
    lived = live.run_live(doc, zk, trace=True)
    report = lived.result.pop("zookeeper")
    assert report["differences"] == []
    assert report["operations"] > 0
    assert _without_fenced_messages(lived.result, report["refused_writes"]) == \
        _without_fenced_messages(simulated.result, report["refused_writes"])
    if report["refused_writes"]:
        assert len(lived.mismatches) == len(simulated.mismatches)  # a refusal's message names ZooKeeper
    else:
        assert lived.mismatches == simulated.mismatches
    assert not _exists(zk, report["chroot"])  # the run's chroot is gone


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_zombie_write_refused_by_zookeeper(zk: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The stale controller's conditional write reaches ZooKeeper and is refused with BadVersion."""
    code, out, err = _cli(["run", "--trace", "--zookeeper", zk, str(ZOMBIE)], capsys)
    assert code == 0, err
    doc = json.loads(out)
    refused = doc["zookeeper"]["refused_writes"]
    assert refused == [{"step": 2, "op": "zombie_elect", "controller": 0, "path": "/controller_epoch",
                        "error": "BadVersion", "expected_version": 1, "version": 2}]
    assert doc["log"][2]["error"] == "StaleControllerEpoch"
    assert "ZooKeeper refused" in doc["log"][2]["message"]
    assert doc["partitions"]["t-0"]["leader"] == 0


def test_stale_leader_isr_write_refused_by_zookeeper(zk: str) -> None:
    """A leader's ISR write at an outdated zkVersion is refused by ZooKeeper's version check too."""
    path = next(p for p in SCENARIOS if p.name == "stale-isr-shrink.json")
    report = live.run_live(parse_text(path.read_bytes()), zk).result["zookeeper"]
    assert [(r["op"], r["error"], r["expected_version"], r["version"]) for r in report["refused_writes"]] == \
        [("isr_shrink", "BadVersion", 0, 1)]


def test_controller_notified_of_broker_failure(zk: str) -> None:
    """The controller's child watch on /brokers/ids fires when a broker's session expires, as the model says."""
    path = next(p for p in SCENARIOS if p.name == "broker-failure.json" and p.parent.name == "ops")
    report = live.run_live(parse_text(path.read_bytes()), zk).result["zookeeper"]
    assert {"step": 1, "to": 0, "event": "NodeChildrenChanged", "path": "/brokers/ids"} in report["notifications"]
    assert report["differences"] == []


def test_unfenced_zombie_write_accepted_by_zookeeper(zk: str) -> None:
    """With KAFKA-6082's fix reverted the zombie's write carries no epoch check, and ZooKeeper takes it."""
    path = next(p for p in SCENARIOS if p.name == "KAFKA-6082.json")
    lived = live.run_live(parse_text(path.read_bytes()), zk)
    assert lived.result["zookeeper"]["refused_writes"] == []
    assert lived.result["partitions"]["t-0"]["leader"] != 0


@pytest.mark.parametrize("address, words", [
    ("127.0.0.1", "not HOST:PORT"),
    ("127.0.0.1:70000", "outside 1-65535"),
    ("no such host:2181", "not HOST:PORT"),
    ("nohost.invalid:2181", "unknown host"),
])
def test_bad_address_exits_2(address: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed or unresolvable HOST:PORT: exit 2, one line naming the file, the flag and the problem."""
    code, out, err = _cli(["run", "--zookeeper", address, str(ZOMBIE)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and words in err and str(ZOMBIE) in err and "--zookeeper" in err


def test_refused_connection_exits_2(zk: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listening on the port: exit 2 with one line, no thread left behind."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: a connection is refused
        threads = threading.active_count()
        code, out, err = _cli(["run", "--zookeeper", f"127.0.0.1:{port}", str(ZOMBIE)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "connection refused" in err
    assert threading.active_count() == threads


def test_lost_session_mid_run(zk: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A controller session expired behind the run's back: exit 2 with one line; no znode, no thread left."""
    real_step = live.LiveEngine.step
    chroots: list[str] = []

    def step(self: live.LiveEngine, config: Any, state: Any, action: Any) -> Any:
        """The engine's step, after ending the controller's session behind its back before step 1."""
        chroots.append(self.server.chroot)
        if self.step_index == 1:
            # Someone else ends the controller's session; the engine does not know.
            _, session = self.sessions[state.zk.controller]
            from kazoo.client import KazooClient

            killer = KazooClient(hosts=self.server.hosts, client_id=session.client.client_id)
            killer.start(timeout=3)
            killer.stop()
            killer.close()
        return real_step(self, config, state, action)

    monkeypatch.setattr(live.LiveEngine, "step", step)
    threads = threading.active_count()
    code, out, err = _cli(["run", "--zookeeper", zk, str(ZOMBIE)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "lost mid-run" in err, err
    assert chroots and not _exists(zk, chroots[0])
    assert threading.active_count() <= threads


def test_run_live_raises_live_error_for_a_dead_server() -> None:
    """The API gives LiveError (never a traceback of kazoo's) when no server answers."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        with pytest.raises(LiveError, match="connection refused"):
            live.run_live(parse_text(ZOMBIE.read_bytes()), f"127.0.0.1:{s.getsockname()[1]}")


def test_cli_flag_is_declared() -> None:
    """`kcm run --help` names --zookeeper (the flag is parsed, not guessed)."""
    from kcm.commands import run as run_cmd

    p = argparse.ArgumentParser()
    run_cmd.add_arguments(p)
    assert p.parse_args(["--zookeeper", "h:1", "s.json"]).zookeeper == "h:1"


def test_divergence_from_the_simulated_run_is_listed(zk: str, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Were ZooKeeper to take the zombie's write, the live result would differ from the simulated run's: exit 1."""

    def accepted(self: live.LiveEngine, config: Any, state: Any, action: Any, err: Any) -> Any:
        """As if ZooKeeper had accepted the stale controller's write: the unfenced step's state is taken."""
        return live.api.step(config._replace(variants=config.variants + ("KAFKA-6082",)), state, action)

    monkeypatch.setattr(live.LiveEngine, "_fenced_attempt", accepted)
    code, out, err = _cli(["run", "--zookeeper", zk, str(ZOMBIE)], capsys)
    assert code == 1
    assert "the result's 'partitions' differs from the simulated run's" in json.loads(out)["zookeeper"]["differences"]


def test_sigterm_mid_run_leaves_no_chroot(zk: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGTERM during a live run unwinds it: sessions closed, chroot deleted."""
    import os
    import signal

    real_step = live.LiveEngine.step
    chroots: list[str] = []

    def step(self: live.LiveEngine, config: Any, state: Any, action: Any) -> Any:
        """The engine's step, after this process receives SIGTERM before step 1."""
        chroots.append(self.server.chroot)
        if self.step_index == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_step(self, config, state, action)

    monkeypatch.setattr(live.LiveEngine, "step", step)
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit):
        live.run_live(parse_text(ZOMBIE.read_bytes()), zk)
    assert signal.getsignal(signal.SIGTERM) is handler
    assert chroots and not _exists(zk, chroots[0])


def test_model_keeping_a_dead_brokers_registration_is_listed(zk: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that kept /brokers/ids/N after N's session expired disagrees with ZooKeeper, and the run says so."""
    from kcm.model import actions as A
    from kcm.reference import api, brokers

    def broker_fail_keeping_registration(t: Any, a: Any) -> None:
        """broker_fail, with the registration put back (a model bug ZooKeeper's session expiry exposes)."""
        brokers.broker_fail(t, a)
        t.zk.brokers.add(a.broker)

    monkeypatch.setitem(api.HANDLERS, A.BrokerFail, broker_fail_keeping_registration)
    path = next(p for p in SCENARIOS if p.name == "broker-failure.json" and p.parent.name == "ops")
    outcome = live.run_live(parse_text(path.read_bytes()), zk)
    assert outcome.exit_code == 1
    assert outcome.result["zookeeper"]["differences"] == [
        "step 1: the model has /brokers/ids/1, ephemeral to broker 1, which has no ZooKeeper session"]

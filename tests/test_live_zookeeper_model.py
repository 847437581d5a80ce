"""Differential test of kcm's ZooKeeper model (`kcm.model.zookeeper`) against a real ZooKeeper server.

Hypothesis generates sequences of operations (create, ephemeral create, conditional set, delete, a multi of a
version check and a set, session expiry, leaving a watch, reading the watch events that fired) over two client
sessions. Each sequence runs on the model and on the server, under a fresh znode of its own; every outcome
(success or ZooKeeper's error), the watch events each session received after each operation, and at the end
every znode's data, version, cversion and ephemeral owner must match.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kcm.checkers.live.zk_server import Server, Session
from kcm.model import zookeeper as zkm

from tests.live_server import zookeeper_address

PATHS = ("/a", "/a/b", "/c")
SLOTS = (0, 1)
VERSIONS = st.sampled_from((-1, 0, 1, 2))
DATA = st.sampled_from((b"", b"x", b"yy"))

CREATES = st.tuples(st.just("create"), st.sampled_from(SLOTS), st.sampled_from(PATHS), DATA, st.booleans())
# Hypothesis leans towards the first alternatives: watches and writes of existing znodes come first.
OPS = st.one_of(
    st.tuples(st.just("watch"), st.sampled_from(SLOTS), st.sampled_from(("/",) + PATHS), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(SLOTS), st.sampled_from(PATHS), st.sampled_from((-1, 0, 1))),
    st.tuples(st.just("set"), st.sampled_from(SLOTS), st.sampled_from(PATHS), DATA, VERSIONS),
    st.tuples(st.just("fenced_set"), st.sampled_from(SLOTS), st.sampled_from(PATHS), VERSIONS,
              st.sampled_from(PATHS), DATA, VERSIONS),
    CREATES,
    st.tuples(st.just("expire"), st.sampled_from(SLOTS)),
    st.tuples(st.just("read"), st.sampled_from(SLOTS)),
)


class Pair:
    """One sequence's model and server side: both sessions of each slot, and the znode the sequence lives under."""

    def __init__(self, server: Server, sessions: list[Session], base: str) -> None:
        self.server, self.base = server, base
        self.real = sessions
        self.model = zkm.empty()
        self.sid: list[int] = []
        for _ in SLOTS:
            self.model, sid = zkm.open_session(self.model)
            self.sid.append(sid)

    def real_path(self, path: str) -> str:
        """The server path of a model path."""
        return self.base if path == "/" else self.base + path

    def model_path(self, path: str) -> str:
        """The model path of a server path."""
        return "/" if path == self.base else path[len(self.base):]

    def model_op(self, fn: Any, *args: Any) -> tuple[str, int] | None:
        """Apply a model operation; its outcome as the server reports one."""
        try:
            self.model = fn(self.model, *args)
        except zkm.ZooKeeperError as err:
            return err.name, getattr(err, "index", 0)
        return None

    def step(self, op: tuple) -> tuple[Any, Any]:
        """Run one op on both sides; (model outcome, server outcome)."""
        kind, slot = op[0], op[1]
        sid, real = self.sid[slot], self.real[slot]
        if kind == "create":
            _, _, path, data, eph = op
            return (self.model_op(zkm.create, sid, path, data, eph),
                    real.run([("create", self.real_path(path), data, eph)], False))
        if kind == "set":
            _, _, path, data, version = op
            return (self.model_op(zkm.set_data, sid, path, data, version),
                    real.run([("set", self.real_path(path), data, version)], False))
        if kind == "delete":
            _, _, path, version = op
            return (self.model_op(zkm.delete, sid, path, version),
                    real.run([("delete", self.real_path(path), version)], False))
        if kind == "fenced_set":
            _, _, fence, fence_version, path, data, version = op
            ops = [("check", fence, fence_version), ("set", path, data, version)]
            return (self.model_op(zkm.multi, sid, ops),
                    real.run([(k, self.real_path(p), *rest) for k, p, *rest in ops], True))
        if kind == "expire":
            self.model = zkm.expire(self.model, sid)
            self.model, self.sid[slot] = zkm.open_session(self.model)
            self.server.expire(real)
            self.real[slot] = self.server.open(f"client {slot}")
            return None, None
        if kind == "watch":
            _, _, path, children = op
            got = real.watch(self.real_path(path), children)
            return self.model_op(zkm.watch, sid, path, children), (None if got is None else (got, 0))
        self.model, fired = zkm.read_events(self.model, sid)
        real_fired = [(e, self.model_path(p)) for e, p in real.read_events()]
        # The server deletes an expired session's ephemerals in no fixed order: compare the events as sets.
        return sorted(fired), sorted(real_fired)

    def trees(self) -> tuple[dict, dict]:
        """Every znode of the sequence on both sides: path -> (data, version, cversion, owner slot or None)."""
        owners = {s.session_id: i for i, s in enumerate(self.real)}
        model_owner = {sid: i for i, sid in enumerate(self.sid)}
        model = {p: (z.data, z.version, z.cversion, model_owner.get(z.owner, z.owner or None))
                 for p, z in self.model.nodes}
        real = {}
        for path, (data, version, cversion, owner) in self.server.snapshot(self.real[0]).items():
            if path == self.base or path.startswith(self.base + "/"):
                real[self.model_path(path)] = (data, version, cversion, owners.get(owner, owner or None))
        return model, real


@pytest.fixture(scope="session")
def zk_address(request: pytest.FixtureRequest) -> str:
    """HOST:PORT of the live server (started for the session in CI)."""
    return zookeeper_address(request)


@pytest.fixture(scope="module")
def server(zk_address: str) -> Any:
    """One chroot on the live server for the module's sequences, deleted afterwards."""
    srv = Server(zk_address, prefix="kcm-difftest")
    yield srv
    srv.close()


_counter = itertools.count()


@settings(max_examples=200,  # generated sequences, besides the explicit examples
          derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(first=st.lists(CREATES, min_size=1, max_size=4), rest=st.lists(OPS, min_size=3, max_size=20))
# Three sequences every run includes besides the generated ones: a child watch on a znode that is then deleted;
# an ephemeral znode watched by the other session when its owner's session expires; a fenced write refused by its
# version check while its target was watched.
@example(first=[("create", 0, "/a", b"x", False)], rest=[("watch", 1, "/a", True), ("delete", 0, "/a", -1),
                                                         ("watch", 0, "/a", True), ("watch", 0, "/", False)])
@example(first=[("create", 0, "/a", b"", True)], rest=[("watch", 1, "/a", False), ("watch", 1, "/", True),
                                                       ("expire", 0), ("create", 0, "/a", b"", False)])
@example(first=[("create", 0, "/a", b"", False), ("create", 0, "/c", b"", False)],
         rest=[("watch", 1, "/c", False), ("fenced_set", 0, "/a", 1, "/c", b"x", 0),
               ("fenced_set", 0, "/a", 0, "/c", b"x", 0)])
def test_model_matches_server(server: Server, first: list[tuple], rest: list[tuple]) -> None:
    """Every outcome, every event read and the final tree agree between the model and the server."""
    ops = first + rest  # a few creates first, so that later writes mostly find their znodes
    base = f"/seq-{next(_counter)}"
    setup = server.sessions[0] if server.sessions else server.open("client 0")
    while len(server.sessions) < len(SLOTS):
        server.open(f"client {len(server.sessions)}")
    setup.run([("create", base, b"", False)], False)
    pair = Pair(server, list(server.sessions[:len(SLOTS)]), base)
    for s in pair.real:
        s.read_events()  # events of an earlier sequence's clean-up are not this sequence's
    try:
        for i, op in enumerate(ops):
            model, real = pair.step(op)
            assert model == real, f"op {i} {op}: model {model}, server {real}"
            for slot in SLOTS:  # the watch events each op fired, op by op
                model, real = pair.step(("read", slot))
                assert model == real, f"events of client {slot} after op {i} {op}: model {model}, server {real}"
        model_tree, real_tree = pair.trees()
        assert model_tree == real_tree
    finally:
        pair.real[0].call(pair.real[0].client.delete, base, recursive=True)
        for s in pair.real:
            s.read_events()

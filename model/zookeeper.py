"""ZooKeeper's data model as one immutable value: znodes with versions, sessions, ephemerals and one-shot watches.

This is the generic operation API under the controller's `Zk` record (`kcm.model.cluster`): the rules every
znode write obeys, said once. A create starts a znode at version 0; a set bumps the version by one and, given an
expected version other than -1, is refused with BadVersion when the znode moved; an ephemeral znode vanishes
when its owner's session ends; a watch fires once. `kcm.model.znodes` lays the controller's `Zk` record out as
these znodes, and the live mode predicts each write it sends to a real server with these functions (a test
runs random operation sequences on both and compares).

Every operation is a pure function `(ZooKeeper, ...) -> ZooKeeper` (or a read); a refused one raises a
`ZooKeeperError` named as ZooKeeper names it (`NoNode`, `NodeExists`, `BadVersion`, `NotEmpty`,
`NoChildrenForEphemerals`, `SessionExpired`) and changes nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from kcm.model.errors import KcmError

ANY_VERSION = -1
PERSISTENT = 0  # the owner of a persistent znode (ZooKeeper's ephemeralOwner 0)

# Watch events, as ZooKeeper's Watcher.Event.EventType names them.
NODE_CREATED = "NodeCreated"
NODE_DELETED = "NodeDeleted"
NODE_DATA_CHANGED = "NodeDataChanged"
NODE_CHILDREN_CHANGED = "NodeChildrenChanged"


class ZooKeeperError(KcmError):
    """A ZooKeeper operation refused; `name` is ZooKeeper's code (KeeperException.Code in CamelCase)."""

    name = "ZooKeeperError"

    def __init__(self, path: str, message: str = "") -> None:
        super().__init__(f"{self.name} for {path}" + (f": {message}" if message else ""))
        self.path = path


class NoNode(ZooKeeperError):
    """The znode (or its parent, for a create) does not exist."""

    name = "NoNode"


class NodeExists(ZooKeeperError):
    """A create of a znode that already exists."""

    name = "NodeExists"


class BadVersion(ZooKeeperError):
    """A conditional write whose expected version is not the znode's version."""

    name = "BadVersion"


class NotEmpty(ZooKeeperError):
    """A delete of a znode that has children."""

    name = "NotEmpty"


class NoChildrenForEphemerals(ZooKeeperError):
    """A create under an ephemeral znode."""

    name = "NoChildrenForEphemerals"


class SessionExpired(ZooKeeperError):
    """An operation in a session that has ended."""

    name = "SessionExpired"


class Znode(NamedTuple):
    """One znode: its data and the parts of its Stat that the model keeps."""

    data: bytes
    version: int  # bumped by each set
    cversion: int  # bumped by each create or delete of a child
    owner: int  # the session of an ephemeral znode; PERSISTENT otherwise


class Watch(NamedTuple):
    """A one-shot watch a session left on a path: on its data and existence, or on its children."""

    session: int
    path: str
    children: bool


class ZooKeeper(NamedTuple):
    """A ZooKeeper ensemble's whole state as its clients can observe it."""

    nodes: tuple[tuple[str, Znode], ...]  # path -> znode, sorted by path; "/" is always there
    sessions: tuple[int, ...]  # open sessions, sorted
    watches: tuple[Watch, ...]  # sorted, no duplicates
    events: tuple[tuple[int, tuple[tuple[str, str], ...]], ...]  # session -> (event, path) fired, not yet read
    next_session: int = 1

    def node(self, path: str) -> Znode | None:
        """The znode at path, or None."""
        for p, z in self.nodes:
            if p == path:
                return z
        return None

    def children(self, path: str) -> tuple[str, ...]:
        """The names of path's children, sorted."""
        prefix = path.rstrip("/") + "/"
        return tuple(p[len(prefix):] for p, _ in self.nodes if p.startswith(prefix) and "/" not in p[len(prefix):]
                     and p != prefix)


def empty() -> ZooKeeper:
    """An ensemble with only the root znode and no session."""
    return ZooKeeper((("/", Znode(b"", 0, 0, PERSISTENT)),), (), (), ())


def parent_of(path: str) -> str:
    """The parent path of a znode path ("/" for a top-level znode)."""
    head = path.rsplit("/", 1)[0]
    return head or "/"


def open_session(zk: ZooKeeper) -> tuple[ZooKeeper, int]:
    """A new session; returns the ensemble and the session's id."""
    sid = zk.next_session
    return zk._replace(sessions=tuple(sorted(zk.sessions + (sid,))), next_session=sid + 1), sid


def _live(zk: ZooKeeper, session: int, path: str) -> None:
    if session not in zk.sessions:
        raise SessionExpired(path, f"session {session} is not open")


def _put(nodes: dict[str, Znode], zk: ZooKeeper, fired: list[tuple[str, str, bool]]) -> ZooKeeper:
    """The ensemble with `nodes`, after the watches the changes `fired` (event, path, children?) trigger."""
    watches = list(zk.watches)
    events = {s: list(e) for s, e in zk.events}
    for event, path, on_children in fired:
        hit = [w for w in watches if w.path == path and (w.children == on_children or event == NODE_DELETED)]
        for w in hit:
            watches.remove(w)
        # A session watching a deleted znode's data and children hears one NodeDeleted (ZooKeeper sends one
        # notification per connection and event).
        for session in sorted({w.session for w in hit}):
            events.setdefault(session, []).append((event, path))
    return zk._replace(nodes=tuple(sorted(nodes.items())), watches=tuple(watches),
                       events=tuple((s, tuple(e)) for s, e in sorted(events.items()) if e))


def create(zk: ZooKeeper, session: int, path: str, data: bytes = b"", ephemeral: bool = False) -> ZooKeeper:
    """Create a znode (version 0); NoNode without its parent, NodeExists, NoChildrenForEphemerals."""
    _live(zk, session, path)
    nodes = dict(zk.nodes)
    parent = parent_of(path)
    if parent not in nodes:
        raise NoNode(path, f"parent {parent} does not exist")
    if path in nodes:
        raise NodeExists(path)
    if nodes[parent].owner != PERSISTENT:
        raise NoChildrenForEphemerals(path, f"parent {parent} is ephemeral")
    nodes[path] = Znode(data, 0, 0, session if ephemeral else PERSISTENT)
    nodes[parent] = nodes[parent]._replace(cversion=nodes[parent].cversion + 1)
    return _put(nodes, zk, [(NODE_CREATED, path, False), (NODE_CHILDREN_CHANGED, parent, True)])


def _expect(node: Znode | None, path: str, version: int) -> Znode:
    if node is None:
        raise NoNode(path)
    if version != ANY_VERSION and version != node.version:
        raise BadVersion(path, f"expected version {version}, the znode is at {node.version}")
    return node


def check(zk: ZooKeeper, session: int, path: str, version: int) -> ZooKeeper:
    """A multi's version check: NoNode, or BadVersion when the znode is not at version."""
    _live(zk, session, path)
    _expect(zk.node(path), path, version)
    return zk


def set_data(zk: ZooKeeper, session: int, path: str, data: bytes, version: int = ANY_VERSION) -> ZooKeeper:
    """Set a znode's data, conditional on its version unless it is -1; the version goes up by one."""
    _live(zk, session, path)
    node = _expect(zk.node(path), path, version)
    nodes = dict(zk.nodes)
    nodes[path] = node._replace(data=data, version=node.version + 1)
    return _put(nodes, zk, [(NODE_DATA_CHANGED, path, False)])


def delete(zk: ZooKeeper, session: int, path: str, version: int = ANY_VERSION) -> ZooKeeper:
    """Delete a childless znode, conditional on its version unless it is -1."""
    _live(zk, session, path)
    if path == "/":
        raise ZooKeeperError(path, "the root cannot be deleted")
    _expect(zk.node(path), path, version)
    if zk.children(path):
        raise NotEmpty(path)
    return _remove(zk, path)


def _remove(zk: ZooKeeper, path: str) -> ZooKeeper:
    nodes = dict(zk.nodes)
    del nodes[path]
    parent = parent_of(path)
    nodes[parent] = nodes[parent]._replace(cversion=nodes[parent].cversion + 1)
    return _put(nodes, zk, [(NODE_DELETED, path, False), (NODE_CHILDREN_CHANGED, parent, True)])


def multi(zk: ZooKeeper, session: int, ops: list[tuple]) -> ZooKeeper:
    """Apply ops (("check"|"create"|"set"|"delete", path, ...) as the functions take them) all or none.

    A refusal raises the first failing op's error with `index` set to its position; nothing is applied.
    """
    out = zk
    for i, (kind, *args) in enumerate(ops):
        try:
            out = _OPS[kind](out, session, *args)
        except ZooKeeperError as err:
            err.index = i  # type: ignore[attr-defined]
            raise
    return out


_OPS = {"check": check, "create": create, "set": set_data, "delete": delete}


def watch(zk: ZooKeeper, session: int, path: str, children: bool = False) -> ZooKeeper:
    """Leave a watch: on the data and existence of path (exists, get), or on its children (get_children).

    As in ZooKeeper, get_children of a missing znode is refused (NoNode) and leaves nothing; exists leaves a
    watch whether or not the znode is there.
    """
    _live(zk, session, path)
    if children and zk.node(path) is None:
        raise NoNode(path)
    w = Watch(session, path, children)
    if w in zk.watches:
        return zk
    return zk._replace(watches=tuple(sorted(zk.watches + (w,))))


def read_events(zk: ZooKeeper, session: int) -> tuple[ZooKeeper, tuple[tuple[str, str], ...]]:
    """The watch events delivered to session since it last read them, and the ensemble with them consumed."""
    fired = dict(zk.events).get(session, ())
    return zk._replace(events=tuple((s, e) for s, e in zk.events if s != session)), fired


def expire(zk: ZooKeeper, session: int) -> ZooKeeper:
    """End a session: its ephemeral znodes are deleted (firing others' watches); its own watches go."""
    _live(zk, session, "/")
    gone = zk._replace(sessions=tuple(s for s in zk.sessions if s != session),
                       watches=tuple(w for w in zk.watches if w.session != session),
                       events=tuple((s, e) for s, e in zk.events if s != session))
    for path in sorted((p for p, z in zk.nodes if z.owner == session), reverse=True):
        gone = _remove(gone, path)
    return gone

"""A real ZooKeeper server through kazoo: sessions, znode operations with ZooKeeper's error names, snapshots.

kazoo is imported on first use, so a core install of kcm works without it (`pip install 'kcm-kafka[live]'` adds it).
Every failure to reach or keep the server is a `LiveError` with a one-line message; ZooKeeper's refusals of an
operation (BadVersion, NoNode, ...) are answers, returned by name as `kcm.model.zookeeper` names them.
"""

from __future__ import annotations

import logging
import re
import socket
import uuid
from typing import Any

from kcm import DISTRIBUTION

CONNECT_TIMEOUT = 3.0  # seconds: a server that does not answer within this is unreachable
SESSION_TIMEOUT = 6.0  # seconds: ZooKeeper's session timeout asked for (the server may clamp it)

# kazoo's exception class names -> ZooKeeper's codes as kcm.model.zookeeper names them.
_CODES = {"NoNodeError": "NoNode", "NodeExistsError": "NodeExists", "BadVersionError": "BadVersion",
          "NotEmptyError": "NotEmpty", "NoChildrenForEphemeralsError": "NoChildrenForEphemerals"}
_EVENTS = {"CREATED": "NodeCreated", "DELETED": "NodeDeleted", "CHANGED": "NodeDataChanged",
           "CHILD": "NodeChildrenChanged"}
_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):([0-9]{1,5})$")


class LiveError(Exception):
    """The live mode cannot go on: the server is unreachable, refused the connection, or a session was lost."""


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT -> (host, port); LiveError naming the problem otherwise."""
    m = _ADDRESS.match(text)
    if m is None:
        raise LiveError("not HOST:PORT (for example 127.0.0.1:2181)")
    port = int(m.group(2))
    if not 0 < port < 65536:
        raise LiveError(f"port {port} is outside 1-65535")
    return m.group(1).strip("[]"), port


def _kazoo() -> Any:
    try:
        from kazoo import client, exceptions
    except ImportError:
        raise LiveError(f"the live mode needs kazoo: pip install '{DISTRIBUTION}[live]'") from None
    # kazoo logs connection drops at WARNING; the live mode reports them itself, in one line.
    logging.getLogger("kazoo").setLevel(logging.CRITICAL + 1)
    return client, exceptions


def probe(host: str, port: int, timeout: float = CONNECT_TIMEOUT) -> None:
    """Check that a ZooKeeper answers at host:port (the `ruok` four-letter word is not needed: a TCP connect)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except socket.gaierror:
        raise LiveError(f"unknown host {host!r}") from None
    except ConnectionRefusedError:
        raise LiveError("connection refused (is a ZooKeeper server running there?)") from None
    except TimeoutError:
        raise LiveError(f"no answer within {CONNECT_TIMEOUT:g} s (unreachable)") from None
    except OSError as err:
        raise LiveError(f"cannot connect: {err.strerror or err}") from None


class Session:
    """One ZooKeeper session (one kazoo client) under the run's chroot, with the watch events it has received."""

    def __init__(self, hosts: str, name: str) -> None:
        client, _ = _kazoo()
        self.name = name
        self.client = client.KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT,
                                         connection_retry={"max_tries": 0})
        self.lost = False
        self.events: list[tuple[str, str]] = []
        self._last_event: Any = None
        self.client.add_listener(self._on_state)
        try:
            self.client.start(timeout=CONNECT_TIMEOUT)
        except Exception:
            self._close_client()
            raise LiveError(f"no ZooKeeper session within {CONNECT_TIMEOUT:g} s") from None
        self.session_id = self.client.client_id[0]

    def _on_state(self, state: str) -> None:
        if state == "LOST":
            self.lost = True

    def on_event(self, event: Any) -> None:
        """kazoo's watch callback: record (event, path) once per notification."""
        # kazoo calls a callback once per watch it was registered as; a NodeDeleted that ends a data and a child
        # watch of one session is one notification (one WatchedEvent object).
        if event is self._last_event:
            return
        self._last_event = event
        self.events.append((_EVENTS.get(event.type, event.type), event.path))

    def alive(self) -> None:
        """LiveError unless this session is still the one opened (kazoo would silently open a new one)."""
        cid = self.client.client_id
        if self.lost or cid is None or cid[0] != self.session_id:
            raise LiveError(f"the ZooKeeper session of {self.name} was lost mid-run")

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run one kazoo call; ZooKeeper's refusals propagate, a lost session or connection is a LiveError."""
        _, exceptions = _kazoo()
        self.alive()
        try:
            return fn(*args, **kwargs)
        except (exceptions.SessionExpiredError, exceptions.ConnectionLoss, exceptions.ConnectionClosedError,
                exceptions.SessionMovedError):
            raise LiveError(f"the ZooKeeper session of {self.name} was lost mid-run") from None
        except Exception as err:
            if type(err).__name__ in _CODES:
                raise
            if "Timeout" in type(err).__name__:
                raise LiveError(f"ZooKeeper did not answer {self.name} within {SESSION_TIMEOUT:g} s") from None
            if isinstance(err, exceptions.KazooException):
                raise LiveError(f"ZooKeeper answered {self.name} with {type(err).__name__}") from None
            raise

    def run(self, ops: list[tuple], as_multi: bool) -> tuple[str, int] | None:
        """Perform ops (as `kcm.model.zookeeper.multi` takes them): None, or (ZooKeeper's error, failing op's index).

        With as_multi they go as one transaction (all or nothing), else one by one up to the first refusal.
        """
        c = self.client
        if not as_multi:
            for i, op in enumerate(ops):
                try:
                    self.call(_single(c, op))
                except Exception as err:
                    if type(err).__name__ in _CODES:
                        return _CODES[type(err).__name__], i
                    raise
            return None
        tx = c.transaction()
        for kind, path, *args in ops:
            if kind == "check":
                tx.check(path, args[0])
            elif kind == "create":
                tx.create(path, args[0], ephemeral=args[1])
            elif kind == "set":
                tx.set_data(path, args[0], version=args[1])
            else:
                tx.delete(path, version=args[0])
        results = self.call(tx.commit)
        for i, r in enumerate(results):
            if isinstance(r, Exception) and type(r).__name__ in _CODES:
                return _CODES[type(r).__name__], i
        for r in results:
            if isinstance(r, Exception):
                raise LiveError(f"ZooKeeper answered a transaction of {self.name} with {type(r).__name__}")
        return None

    def watch(self, path: str, children: bool) -> str | None:
        """Leave a watch (exists, or get_children); ZooKeeper's error name if refused."""
        try:
            if children:
                self.call(self.client.get_children, path, watch=self.on_event)
            else:
                self.call(self.client.exists, path, watch=self.on_event)
        except Exception as err:
            if type(err).__name__ in _CODES:
                return _CODES[type(err).__name__]
            raise
        return None

    def read_events(self) -> list[tuple[str, str]]:
        """The watch events received since the last read, once every notification sent so far has arrived."""
        from kazoo.protocol.states import Callback

        # A round trip after the writes: ZooKeeper sends a session its notifications before later replies ...
        self.call(self.client.sync, "/")
        # ... and kazoo runs watch callbacks on one queue, in order: a marker queued now runs after them.
        done = self.client.handler.event_object()
        self.client.handler.dispatch_callback(Callback("watch", done.set, ()))
        if not done.wait(SESSION_TIMEOUT):
            raise LiveError(f"kazoo did not deliver the watch events of {self.name}")
        out, self.events = self.events, []
        return out

    def _close_client(self) -> None:
        try:
            self.client.stop()
        finally:
            self.client.close()

    def close(self) -> None:
        """End the session (its ephemeral znodes go) and stop the client's threads."""
        self._close_client()


def _single(c: Any, op: tuple) -> Any:
    kind, path, *args = op
    if kind == "create":
        return lambda: c.create(path, args[0], ephemeral=args[1])
    if kind == "set":
        return lambda: c.set(path, args[0], version=args[1])
    if kind == "delete":
        return lambda: c.delete(path, version=args[0])

    def check() -> None:
        """A lone version check, sent as a one-op transaction (ZooKeeper has no other form of it)."""
        tx = c.transaction()
        tx.check(path, args[0])
        for r in tx.commit():
            if isinstance(r, Exception):
                raise r
    return check


class Server:
    """A connection to one ZooKeeper server, a fresh chroot for this run, and the sessions opened under it."""

    def __init__(self, address: str, prefix: str = "kcm-live") -> None:
        host, port = parse_address(address)
        probe(host, port)
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.chroot = f"/{prefix}-{uuid.uuid4().hex[:12]}"
        self.hosts = self.address + self.chroot
        self.sessions: list[Session] = []
        root = Session(self.address, "the run's set-up")
        try:
            root.call(root.client.create, self.chroot, b"")
        finally:
            root.close()

    def open(self, name: str) -> Session:
        """A new session under the chroot."""
        s = Session(self.hosts, name)
        self.sessions.append(s)
        return s

    def expire(self, session: Session) -> None:
        """End a session as an expiry does: a second client attaches to it and closes it; its ephemerals go."""
        client, _ = _kazoo()
        session.alive()
        twin = client.KazooClient(hosts=self.hosts, timeout=SESSION_TIMEOUT, client_id=session.client.client_id,
                                  connection_retry={"max_tries": 0})
        try:
            twin.start(timeout=CONNECT_TIMEOUT)
        except Exception:
            raise LiveError(f"could not attach to the session of {session.name} to expire it") from None
        finally:
            twin.stop()
            twin.close()
        session.lost = True
        session.close()
        self.sessions.remove(session)

    def snapshot(self, session: Session) -> dict[str, tuple[bytes, int, int, int]]:
        """Every znode under the chroot: path -> (data, version, cversion, ephemeral owner's session id or 0)."""
        out: dict[str, tuple[bytes, int, int, int]] = {}
        todo = ["/"]
        while todo:
            path = todo.pop()
            data, stat = session.call(session.client.get, path)
            out[path] = (data, stat.version, stat.cversion, stat.ephemeralOwner)
            for child in session.call(session.client.get_children, path):
                todo.append(path.rstrip("/") + "/" + child)
        return out

    def close(self) -> None:
        """Close every session, then delete the chroot and everything under it."""
        for s in self.sessions:
            try:
                s.close()
            except Exception:  # noqa: BLE001 - closing is best effort; the chroot is deleted below either way
                pass
        self.sessions = []
        try:
            cleaner = Session(self.address, "the run's clean-up")
        except LiveError:
            return  # the server is gone: nothing of this run can remain on it but persistent znodes
        try:
            cleaner.call(cleaner.client.delete, self.chroot, recursive=True)
        except Exception:  # noqa: BLE001 - a chroot already gone is what we want
            pass
        finally:
            cleaner.close()

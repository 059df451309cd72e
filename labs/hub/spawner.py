"""The spawner of a class: JupyterHub's LocalProcessSpawner (each server as its person's unix user), with each
student's server, and so everything it starts, inside the student's control group (:mod:`labs.hub.limits`).

The server's process joins the group before it drops to the student's uid (in ``preexec_fn``, still root), so
no process of the student's ever runs outside it. There too (:mod:`labs.hub.walls`) every server, the
instructor's included, gets a private /tmp, /var/tmp and /dev/shm, and a student's a file-size limit; the
environment points every temp folder and compile cache there. Every second the spawner looks at the group: a fork bomb
that filled it is killed (every process but the server, which restarts the kernel and tells the student that
it died). When the server stops, what is left in the group is killed and the group removed.

Each server's port is drawn below the kernel's ephemeral range (:func:`server_port`): JupyterHub draws it from
that range, where the kernels of 20 students bind their ZeroMQ ports too; in a load test one student's server
lost its port to another's kernel between the draw and its start, and the hub waited on a ZeroMQ socket.
A port drawn stays the server's until it stops (:data:`HANDED_OUT`): the draw only binds and lets go, so two
servers starting in the same second could draw the same free port; the second then cannot bind it, and the hub,
finding a server that answers there (the first one's), routes the student to a classmate's server.
"""

from __future__ import annotations

import pwd
import random
import socket

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from tornado.ioloop import PeriodicCallback
from traitlets import Float, Integer, List, Set, Unicode

from labs.hub.limits import StudentGroup, create_group
from labs.hub.plan import Limits
from labs.hub.walls import limit_file_size, private_tmp

# Every temp folder and compile cache in the server's private /tmp (torch's inductor and its precompiled headers,
# triton's): nothing at a path another user could create first. The runtime folder (connection files, the kernels'
# unix sockets) too: a socket's path must stay under 108 bytes, which one in a home under the class's root may not.
# No user site: nothing of the user's own runs when their server starts.
PRIVATE_ENV = {
    "TMPDIR": "/tmp",
    "TORCHINDUCTOR_CACHE_DIR": "/tmp/torchinductor",
    "TRITON_CACHE_DIR": "/tmp/triton",
    "JUPYTER_RUNTIME_DIR": "/tmp/jupyter-runtime",
    "PYTHONNOUSERSITE": "1",
}


#: Ports this hub has given to servers that have not stopped yet.
HANDED_OUT: set[int] = set()


def server_port(low: int = 10000, high: int | None = None, attempts: int = 200) -> int:
    """A free TCP port on 127.0.0.1 between ``low`` and the start of the ephemeral range (where the OS, and so
    every kernel's ZeroMQ sockets, bind port 0), given to no other server of this hub; it is the caller's
    until :func:`release_port`."""
    if high is None:
        try:
            with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
                high = int(handle.read().split()[0]) - 1
        except (OSError, ValueError, IndexError):
            high = 32767
    for _ in range(attempts):
        port = random.randint(low, high)
        if port in HANDED_OUT:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        HANDED_OUT.add(port)
        return port
    raise RuntimeError(f"no free port between {low} and {high}")


def release_port(port: int) -> None:
    """``port``'s server has stopped: the port may be drawn again."""
    HANDED_OUT.discard(port)


class ClassSpawner(LocalProcessSpawner):
    """LocalProcessSpawner with per-student cgroup limits (memory, CPU quota, processes), a private /tmp for every
    server and a file-size limit for students."""

    class_name = Unicode("labs-hub", help="the class's cgroup folder under the hub's own").tag(config=True)
    memory_bytes = Integer(2 << 30, help="memory of all of a student's processes together").tag(config=True)
    cpus = Float(1.0, help="cores a student's processes may use together (a CPU quota)").tag(config=True)
    processes = Integer(256, help="processes and threads of a student together").tag(config=True)
    unlimited_users = Set(Unicode(), help="users without limits (the instructor)").tag(config=True)
    check_every_ms = Integer(1000, help="how often the group is checked for a fork bomb").tag(config=True)
    tmp_bytes = Integer(
        512 << 20, help="size of each server's private /tmp, /var/tmp and /dev/shm (memory)"
    ).tag(config=True)
    file_bytes = Integer(1 << 30, help="largest file a student's process may write").tag(config=True)
    keep_paths = List(
        Unicode(), help="folders under /tmp the servers need (bound into their private /tmp)"
    ).tag(config=True)

    _student_group: StudentGroup | None = None
    _watch: PeriodicCallback | None = None

    def _limited(self) -> bool:
        return self.user.name not in self.unlimited_users

    def make_preexec_fn(self, name: str):
        """As root: join the student's group, take a private /tmp (:mod:`labs.hub.walls`) and, for a student, the
        file-size limit; then become the person (LocalProcessSpawner's own step)."""
        become = set_user_setuid(name)
        group = self._student_group
        entry = pwd.getpwnam(name)
        tmp_bytes, keep = self.tmp_bytes, list(self.keep_paths)
        file_bytes = self.file_bytes if self._limited() else None

        def preexec() -> None:
            if group is not None:
                group.join()
            private_tmp(entry.pw_uid, entry.pw_gid, tmp_bytes, keep)
            if file_bytes is not None:
                limit_file_size(file_bytes)
            become()

        return preexec

    def get_env(self) -> dict:
        """LocalProcessSpawner's environment, every temp folder and cache in the private /tmp."""
        return {**super().get_env(), **PRIVATE_ENV}

    async def start(self):
        """Create the student's group with their limits, then start the server inside it."""
        if self._limited():
            group, why = create_group(self.class_name, self.user.name)
            if group is None:
                raise RuntimeError(f"no limits for {self.user.name}: {why}")
            self._student_group = StudentGroup(group, Limits(self.memory_bytes, self.cpus, self.processes))
            self._student_group.apply()
            self.log.info(
                "%s's limits: %s (cgroup v%d)",
                self.user.name,
                self._student_group.limits.describe(),
                group.version,
            )
        if self.port not in HANDED_OUT:  # a new server, or one whose old port was given back when it stopped
            self.port = server_port()
        try:
            result = await super().start()
        except BaseException:
            release_port(self.port)  # the hub may never call stop for a server that did not start
            raise
        if self._student_group is not None:
            self._watch = PeriodicCallback(self._check, self.check_every_ms)
            self._watch.start()
        return result

    def _check(self) -> None:
        group = self._student_group
        if group is None:
            return
        said = group.check(spare=self.pid)
        if said:
            self.log.warning("%s %s", self.user.name, said)

    async def stop(self, now: bool = False):
        """Stop the server, then everything left in the student's group, and remove the group."""
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        try:
            await super().stop(now=now)
        finally:
            release_port(self.port)
            if self._student_group is not None:
                self._student_group.remove()
                self._student_group = None

"""`labs hub`: a class on JupyterHub on one machine, with nbgrader's exchange (docs/hub.md).

- :mod:`labs.hub.plan`: who is in the class, where it lives, limits and options (:class:`HubPlan`);
- :mod:`labs.hub.roster`: the class list (``--class roster.csv``);
- :mod:`labs.hub.users`: one unix user per person, homes 0700, who may read what;
- :mod:`labs.hub.limits`: each student's cgroup (memory, CPU, processes);
- :mod:`labs.hub.spawner`: LocalProcessSpawner inside those cgroups (loaded by the hub);
- :mod:`labs.hub.disks`: each student's home and the exchange on a filesystem of its own (a size limit);
- :mod:`labs.hub.walls`: each server's private /tmp and file-size limit (in the spawner's preexec_fn);
- :mod:`labs.hub.kernel`: the class's python3 kernel, no TCP port (ipykernel over unix sockets);
- :mod:`labs.hub.auth`: NativeAuthenticator with the class's accounts (loaded by the hub);
- :mod:`labs.hub.config`: the jupyterhub_config.py and each user's Jupyter config it writes;
- :mod:`labs.hub.run`: set up, run and stop the hub; remove the class;
- :mod:`labs.hub.client`: a person's session over HTTP and websockets (tests, the load benchmark).
"""

from labs.hub.config import hub_config_text, nbgrader_config_text, page_config, server_args, write_user_files
from labs.hub.plan import (
    CHECKOUT,
    DEFAULT_STUDENTS,
    GIB,
    PROXY_HINT,
    PROXY_NAME,
    HubPlan,
    Limits,
    default_disk,
    default_limits,
    find_proxy,
    free_port,
    plan_for,
    subdomain_host_for,
)
from labs.hub.run import (
    ClassNotPossible,
    HubDidNotStart,
    prepare,
    serve,
    setup,
    start,
    stop,
    teardown,
    wait_until_up,
)

__all__ = [
    "CHECKOUT",
    "DEFAULT_STUDENTS",
    "GIB",
    "PROXY_HINT",
    "PROXY_NAME",
    "ClassNotPossible",
    "HubDidNotStart",
    "HubPlan",
    "Limits",
    "default_disk",
    "default_limits",
    "find_proxy",
    "free_port",
    "hub_config_text",
    "nbgrader_config_text",
    "page_config",
    "plan_for",
    "prepare",
    "serve",
    "server_args",
    "setup",
    "start",
    "stop",
    "subdomain_host_for",
    "teardown",
    "wait_until_up",
    "write_user_files",
]

"""The grading sandbox: one bubblewrap worker per core, each with a warm zygote that forks a jailed job.

- :mod:`~graders.sandbox.worker`: the :class:`Worker` the grader drives (start, run a job, its outcome);
- :mod:`~graders.sandbox.zygote`: the warm process inside the sandbox (on :mod:`zygote`'s core);
- :mod:`~graders.sandbox.jail`: uid, namespaces, limits and capabilities of a job;
- :mod:`~graders.sandbox.cgroups` and :mod:`~graders.sandbox.watchdog`: memory and process caps.
"""

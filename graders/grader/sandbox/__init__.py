"""The grading sandbox: one bubblewrap worker per core, each with a warm zygote that forks a jailed job.

- :mod:`~graders.grader.sandbox.worker`: the :class:`Worker` the grader drives (start, run a job, its outcome);
- :mod:`~graders.inside.zygote`: the warm process inside the sandbox (on :mod:`zygote`'s core);
- :mod:`~graders.inside.jail`: uid, namespaces, limits and capabilities of a job;
- :mod:`~graders.grader.sandbox.cgroups` and :mod:`~graders.grader.sandbox.watchdog`: memory and process caps.
"""

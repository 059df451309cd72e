"""Warm processes that fork children: preload once, check that forking is safe, fork per request.

One core, standard library only, serves the three places that fork from a warm process: the kernels
of ``labs run`` (:mod:`labs.run.forked`), the ranks of ``labutils.launch`` and the grading sandbox's
jobs (:mod:`graders.inside.zygote`).

- :mod:`zygote.frames`: the wire format (length-prefixed frames holding JSON messages);
- :mod:`zygote.server`: preload, the fork-safety check, the one ``os.fork`` call, the reaper and the
  serve loop of a zygote that forks one child per request;
- :mod:`zygote.child`: the one set-up every forked child goes through (session, stdio, environment,
  working folder, fresh random state) before it runs its target;
- :mod:`zygote.client`: start a zygote, ask it for a child, and watch that child through a
  ``subprocess.Popen``-like handle.
"""

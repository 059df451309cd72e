"""The `labs` command (:mod:`labs.cli`): the authors' lint and scaffold, `labs run` (every notebook executed
by papermill on warm kernels, reports, timings, the static course), the student's `labs lab`, and the
instructors' release, grade, feedback and export (on :mod:`graders`) and `labs hub`."""

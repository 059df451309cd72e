"""The trusted grader: vetting, the cells a job runs, the sandboxes it drives, the comparison that decides
points (`labs grade`'s pipeline, graders/pipeline.py, assembles it with the nbgrader adapters)."""

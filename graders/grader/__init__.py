"""The trusted grader: vetting, the cells a job runs, the sandboxes it drives, the comparison that decides
points, and `labs grade`'s pipeline."""

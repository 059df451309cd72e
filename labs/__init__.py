"""Notebook execution for CI: lint, papermill runner, reports, timings, workflow files."""

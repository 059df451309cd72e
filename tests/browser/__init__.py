"""Browser helpers for the end-to-end tests: Debian's Chromium, JupyterLab driving, static-site checks."""

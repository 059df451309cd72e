"""MkDocs hooks for the static course (ci/html.py builds the site with them)."""

"""The `labs` commands, one module per kind of user; :mod:`labs.cli` assembles them into the typer app."""

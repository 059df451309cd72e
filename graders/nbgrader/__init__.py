"""Adapters to nbgrader: its course folder and API, the gradebook, feedback, the exchange, releases and the
exports built from the gradebook."""

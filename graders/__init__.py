"""Instructor side: release, grading, export (nbgrader underneath)."""

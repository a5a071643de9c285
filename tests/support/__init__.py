"""Test and benchmark scaffolding: fault injectors, random artifacts, run-scoped topics."""

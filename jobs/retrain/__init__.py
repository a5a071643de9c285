"""Drift closes the loop: sustained drift retrains on recent events and canaries the result."""

"""The fault suite as a command (``make chaos``): faults under load, churn, poison."""

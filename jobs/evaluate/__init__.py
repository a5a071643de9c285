"""Online evaluation: a real period replayed through the running loop, scored per variant."""

"""Replay a real dataset into Kafka, fast or paced by the events' own clock."""

"""The streaming feature job: Kafka events to window and fresh features."""

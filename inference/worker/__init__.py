"""The Kafka-triggered inference worker: requests, features, recall, rank, recommendations."""

"""The shared runtime every role's process runs on, beside the contracts it implements.

How a process reads its settings (:mod:`runtime.settings`) and keeps secrets out of its
logs (:mod:`runtime.redact`); how it talks to Kafka (:mod:`runtime.kafka`, the shared
consumer with dead-letter routing in :mod:`runtime.consumer` and
:mod:`runtime.deadletter`, the Java client's properties in :mod:`runtime.kafka_java`),
to the online store (:mod:`runtime.online`), to MLflow's registry
(:mod:`runtime.model_registry`); its ``/metrics`` server and a file lock. It imports
the contracts (:mod:`schemas`); the contracts import nothing from it.
"""

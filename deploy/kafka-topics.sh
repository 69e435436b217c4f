#!/bin/sh
# Creates the topics of docker-compose.yml before keyscope starts (keyscope runs with
# KEYSCOPE_KAFKA_CREATE_TOPICS=false there, so a misspelt topic stops it instead of being created).
# Layout and settings: docs/scaling.md.
set -eu
topics() { /opt/kafka/bin/kafka-topics.sh --bootstrap-server kafka:9092 --create --if-not-exists --replication-factor 1 "$@"; }

# The Collector's kafka exporter writes here; the ingest role's consumer group reads it.
topics --topic otlp_spans --partitions 12
# Attempts keyed by idempotency key; kept one retry horizon (24 h) plus an hour, what a detect
# instance reads back to rebuild a partition it takes over.
topics --topic keyscope_attempts --partitions 12 --config cleanup.policy=delete --config retention.ms=90000000
# Findings and incident parts, keyed by id: compacted, so it always holds the current set.
topics --topic keyscope_incidents --partitions 3 --config cleanup.policy=compact
# Records no keyscope role could read, with headers naming where they came from.
topics --topic keyscope_dead_letter --partitions 1

"""Kafka clients and their op generators, one factory per workload."""

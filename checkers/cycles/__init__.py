"""Dependency cycles (Elle's G0 and G1c families): edges built in Spark, strongly
connected components and shortest cycles found on the driver."""

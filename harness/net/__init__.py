"""Network faults on nodes."""

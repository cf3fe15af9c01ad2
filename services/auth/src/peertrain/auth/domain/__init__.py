"""The auth service's pure core: policies and decisions, no I/O."""

"""Wiring the event store and read models: bootstrap, projections, imports, verify."""

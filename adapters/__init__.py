"""The outside world: event store wiring, result formats, runner, exporters."""

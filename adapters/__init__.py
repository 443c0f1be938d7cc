"""The outside world, in rooms: store, execution, publication and formats."""

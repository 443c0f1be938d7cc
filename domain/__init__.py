"""The benchmark-results domain: events, aggregates, records and rules."""

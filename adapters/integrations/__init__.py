"""Integrations that record into a ledger from inside other tools while they run."""

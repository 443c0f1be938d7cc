"""The click CLI: the only package that imports click, and nothing imports it."""

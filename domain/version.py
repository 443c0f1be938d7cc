"""benchledger's version. pyproject.toml reads it from here (`[tool.setuptools.dynamic]`),
so the installed metadata, `benchledger --version`, `benchledger.__version__` and what a
run records as `benchledger_version` agree, without a command importing
`importlib.metadata` to ask (25-35 ms of its start-up)."""

VERSION = "0.1.0"

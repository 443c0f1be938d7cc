"""The `/models` page: each model identity with the names its sources state.

It reads the `models` read model where the ledger has one, and else says so and lists the
model names as the runs state them, so the page works on a ledger of any version.
"""

from __future__ import annotations

from typing import Any

from datasette import hookimpl

MODELS_TABLE = "models"
SHOWN_ROWS = 1000
# Without the read model: the names as stated, with how many runs state each.
STATED_NAMES_SQL = (
    "SELECT model, provider, count(*) AS runs FROM runs"
    " GROUP BY model, provider ORDER BY runs DESC, model"
)


async def models_listing(datasette: Any) -> dict[str, Any]:
    """What the page shows: the database, whether it has a `models` table, its columns
    and first rows (or the stated names of `runs` when it has none)."""
    database = next((db for name, db in datasette.databases.items() if name != "_internal"), None)
    if database is None:
        return {"database": None, "has_models": False, "columns": [], "rows": []}
    has_models = await database.table_exists(MODELS_TABLE)
    if has_models:
        sql = f"SELECT * FROM [{MODELS_TABLE}] LIMIT {SHOWN_ROWS + 1}"
    elif await database.table_exists("runs"):
        sql = f"{STATED_NAMES_SQL} LIMIT {SHOWN_ROWS + 1}"
    else:
        sql = ""
    result = await database.execute(sql) if sql else None
    rows = [list(row) for row in result.rows] if result else []
    return {
        "database": database.name,
        "has_models": has_models,
        "columns": list(result.columns) if result else [],
        "rows": rows[:SHOWN_ROWS],
        "more": len(rows) > SHOWN_ROWS,
    }


@hookimpl
def extra_template_vars(view_name: str, request: Any, datasette: Any) -> Any:
    if view_name != "page" or request is None or request.path.rstrip("/") != "/models":
        return {}

    async def listing() -> dict[str, Any]:
        return {"models": await models_listing(datasette)}

    return listing

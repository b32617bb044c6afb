from django import template

register = template.Library()


@register.filter
def get(mapping: dict | None, key: str):
    """`{{ d|get:key }}`: dict lookup with a computed key."""
    return (mapping or {}).get(key)


@register.filter
def nccl_keys(nccl: dict) -> list[str]:
    keys = set(nccl.get("declared", {}))
    for env in nccl.get("effective_by_rank", {}).values():
        keys.update(env)
    return sorted(keys)


@register.filter
def drift_keys(nccl: dict) -> set[str]:
    return {d["key"] for d in nccl.get("drift", [])}


@register.filter
def src_of(logfile, line: int) -> dict:
    """A provenance link's target from a log file (or its id) and a line."""
    return {"logfile_id": getattr(logfile, "id", logfile), "line": line}


@register.simple_tag
def process_roles() -> tuple[str, ...]:
    from runs.processes import ROLES

    return ROLES


@register.filter
def signed(value: float | None, digits: int = 2) -> str:
    """`+1.23` / `-0.40`: deltas always show their sign."""
    if value is None:
        return "—"
    return f"{value:+.{int(digits)}f}"



@register.filter
def drift_of(nccl: dict, key: str) -> dict | None:
    return next((d for d in nccl.get("drift", []) if d["key"] == key), None)

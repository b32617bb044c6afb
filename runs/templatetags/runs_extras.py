import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from runs import display
from runs.layout import ROLES

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
    return ROLES


@register.filter
def signed(value: float | None, kind: str | int = 2) -> str:
    """`+1.23` / `-0.40`: deltas always show their sign, rounded as every figure (runs/display.py)."""
    return display.signed(value, kind)


@register.filter
def figure(value: object, kind: str | int) -> str:
    """`{{ run.throughput_tok_s|figure:"tok_s" }}`: the one formatting of a figure (runs/display.py)."""
    return display.figure(value, kind)


@register.filter
def scope_text(scope: dict | None) -> str:
    """`sum over 4 DP ranks (DP attention)` for a summary's throughput_scope, else ""."""
    return display.throughput_scope_text(scope)


@register.filter
def scope_title(scope: dict | None) -> str:
    """The tooltip of scope_text: why the figure covers what it covers."""
    return display.throughput_scope_title(scope)



@register.filter
def drift_of(nccl: dict, key: str) -> dict | None:
    return next((d for d in nccl.get("drift", []) if d["key"] == key), None)


# What Django's json_script escapes, so a figure's text can never close its <script> element.
_SCRIPT_ESCAPES = (("&", "\\u0026"), ("<", "\\u003C"), (">", "\\u003E"))


@register.filter
def chart_json(figure: dict, element_id: str) -> str:
    """`{{ fig|chart_json:"chart-x" }}`: json_script for figures, compact and escaped with
    str.replace (json_script's str.translate took ~0.2 s on a comparison's 400 kB of figures)."""
    text = json.dumps(figure, separators=(",", ":"), cls=DjangoJSONEncoder)
    for char, escaped in _SCRIPT_ESCAPES:
        text = text.replace(char, escaped)
    return format_html('<script id="{}" type="application/json">{}</script>', element_id, mark_safe(text))

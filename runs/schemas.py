"""Input and output schemas of the runs API (runs/api.py), in pairs where both exist."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from ninja import Field, FilterLookup, FilterSchema, Schema
from ninja.pagination import PaginationBase
from pydantic import AfterValidator, BeforeValidator, ConfigDict

from runs import markdown
from runs.models import Annotation, Invitation, LogFile, Membership, NcclSetting, Run
from runs.nccl import NCCL_KEY

StatusName = Literal["queued", "parsing", "ready", "failed"]
MAX_ID = 2**63 - 1  # bigint primary keys: a larger id is no id, not a database error
# Text from users: no NUL (PostgreSQL refuses it in text and jsonb; a 422 beats a 500).
Text = Annotated[str, Field(pattern=r"^[^\x00]*$")]
# The longest integer a JSON input may hold: every number runlens takes fits in 64 bits. Python's
# own limit (4300 digits) raises mid-parse, and a shorter giant still reaches a bigint column.
MAX_INT_DIGITS = 40


class BadJson(ValueError):
    """A JSON input runlens refuses (422 wherever it arrives). Its message completes "the body is ..."."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise BadJson(f"too large a number: an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def read_json(text: str | bytes) -> Any:
    """Every JSON input of the API (request bodies, an upload's `meta`) is read here: a syntax error,
    too deep a nesting, an integer past MAX_INT_DIGITS or a NUL in any string or key is BadJson.
    PostgreSQL refuses NUL in text and jsonb, so one refused here is a 422, never a 500 later."""
    try:
        data = json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as e:
        raise BadJson(f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})", e.lineno) from None
    except RecursionError:
        raise BadJson("nested too deeply") from None
    except UnicodeDecodeError:
        raise BadJson("not UTF-8") from None
    try:
        nul = _has_nul(data)
    except RecursionError:
        raise BadJson("nested too deeply") from None
    if nul:
        raise BadJson("text with a NUL character")
    return data


class ErrorDetail(Schema):
    code: str = Field(description="stable, for programs: `not_found`, `path_outside_allowed_roots`, ...")
    message: str = Field(description="for people")
    line: int | None = Field(None, description="the offending line of the input, when there is one")


class ErrorOut(Schema):
    """Every error of the API has this shape, ninja's own 401/422/429 included."""

    error: ErrorDetail


def errors(*codes: int) -> frozenset[int]:
    """Response codes documented with ErrorOut; 401 (no credentials) and 429 (rate) apply everywhere."""
    return frozenset({401, 429, *codes})


class RunFilters(FilterSchema):
    """The run list's filters: the page (/?tag=...) and `GET /api/v1/runs` read this one schema."""

    tag: Annotated[Text | None, FilterLookup("tags__name")] = Field(
        default=None, max_length=64, description="runs with this tag")
    status: Annotated[StatusName | None, FilterLookup("status")] = None
    engine: Annotated[Text | None, FilterLookup("engine")] = Field(
        default=None, max_length=32, description="sglang, vllm, nccl-tests, ...")
    steps: Annotated[int | None, FilterLookup("steps")] = Field(
        default=None, ge=0, le=32767, description="draft steps per cycle")
    q: Annotated[Text | None, FilterLookup("name__icontains")] = Field(
        default=None, max_length=200, description="name contains (case-insensitive)")
    project: Annotated[Text | None, FilterLookup("project__name")] = Field(
        default=None, max_length=100, description="project name")
    nccl_status: Annotated[Literal["ok", "drift", "unknown", "several"] | None, FilterLookup("nccl_status")] = Field(
        default=None, description="the NCCL verdict (several: 2+ serving launches, none drifting)")
    nccl: Text | None = Field(
        default=None, max_length=600, pattern=r"^[^=]+=.*$",
        description="KEY=VALUE: runs whose serving workers really had this NCCL setting (effective, not declared)",
    )

    def filter_nccl(self, value: str | None) -> Q:
        if not value:
            return Q()
        key, _, wanted = value.partition("=")
        # What the serving workers really had: not what the launcher said, nor an nccl-tests process.
        return Q(id__in=NcclSetting.objects.filter(
            kind=NcclSetting.Kind.EFFECTIVE, key=key.strip().upper(), value__iexact=wanted.strip(),
            role="serving worker",
        ).values("run_id"))


class RunPagination(PaginationBase):
    """Page numbers, with the total over all pages (the run list's and the API's shape)."""

    class Input(Schema):
        page: int = Field(1, ge=1, le=100_000)
        page_size: int = Field(50, ge=1, le=200)

    class Output(Schema):
        items: list[Any]
        total: int = Field(description="runs matching the filters, over all pages")
        page: int
        page_size: int

    def paginate_queryset(self, queryset: QuerySet, pagination: Input, request: HttpRequest, **params: Any) -> dict:
        start = (pagination.page - 1) * pagination.page_size
        return {
            # A QuerySet, or runs.queries.RunPages (the run list): both count and slice.
            "items": queryset[start:start + pagination.page_size], "total": queryset.count(),
            "page": pagination.page, "page_size": pagination.page_size,
        }


class RunOut(Schema):
    """A run's summary figures (medians over windows), as the run list shows them."""

    id: int
    name: str
    project: str
    status: StatusName
    error: str
    created_at: datetime
    created_by: str | None
    tags: list[str]
    engine: str
    spec_algorithm: str
    steps: int | None
    steps_source: str
    throughput_tok_s: float | None
    tokens_per_cycle: float | None
    cycle_ms: float | None
    verify_ms: float | None
    verify_pct: float | None
    windows: int | None
    nccl_status: str
    launches_count: int = Field(0, description=(
        "serving launches in the run; 2 or more means its figures blend them (see parsed.launches)"))
    failed_files: int = Field(0, description=(
        "log files of the run that failed to parse (`error` says why): a `ready` run with failed files "
        "holds the figures of the others only"))
    url: str = Field(description="the run's page")

    @staticmethod
    def resolve_project(run: Run) -> str:
        return run.project.name

    @staticmethod
    def resolve_launches_count(run: Run) -> int:
        return run.launches_count  # a column: lists defer `parsed` (runs.queries.LIST_DEFERRED)

    @staticmethod
    def resolve_created_by(run: Run) -> str | None:
        return run.created_by.get_username() if run.created_by else None

    @staticmethod
    def resolve_tags(run: Run) -> list[str]:
        return sorted(t.name for t in run.tags.all())

    @staticmethod
    def resolve_url(run: Run, context: dict) -> str:
        return context["request"].build_absolute_uri(reverse("run_detail", args=[run.id]))


# The reading warning of a log that ends mid-line (ingest/parsers/text.py read_lines).
PARTIAL_MARK = "ends mid-line"


class LogFileStatusOut(Schema):
    id: int
    name: str = Field(description="the file's name as uploaded (metadata, never a path)")
    status: StatusName
    error: str
    error_line: int | None = Field(description="the line of the log the parse stopped at")
    partial: str | None = Field(None, description=(
        "why the file was read only in part (it ends mid-line: its last line was skipped), else null; "
        "`runlens-upload --wait` exits 7 on it unless --allow-partial"))
    refresh_warning: str = Field("", description=(
        "registered logs: why the last refresh kept the old rows (the file shrank or its first bytes "
        "changed: rotated or truncated), else empty"))

    @staticmethod
    def resolve_name(logfile: LogFile) -> str:
        return logfile.original_name

    @staticmethod
    def resolve_partial(logfile: LogFile) -> str | None:
        return next((f"line {w.get('line')}: {w.get('message')}" for w in logfile.warnings or []
                     if PARTIAL_MARK in str(w.get("message", ""))), None)


class LogFileOut(LogFileStatusOut):
    kind: str = Field(description='"log", or "trace": a PyTorch profiler trace (its breakdown is parsed["trace"])')
    size: int
    sha256: str
    registered: bool = Field(description="read in place from the server (registered by path)")
    formats: list[str]
    lines: int
    parsed_at: datetime | None
    warnings: list[dict[str, Any]]


class RecordedEditOut(Schema):
    what: str = Field(description="tags (before/after: the tag lists) or roles (before/after: "
                      "{roles: {file: role, \"\" = detected}, figures: {figure: value}}, the figures it moved)")
    before: Any
    after: Any
    by: str | None = Field(description="who changed it (None: the user was deleted)")
    at: datetime


class RunDetailOut(RunOut):
    notes: str
    meta: dict[str, Any] = Field(description="upload metadata: ci{commit, branch, url}, ...")
    logfiles: list[LogFileOut]
    parsed: dict[str, Any] = Field(
        description="the parse of the whole run, the DESIGN 'Contract' shape; {} until a file is parsed",
    )
    edits: list[RecordedEditOut] = Field(description="changes people made to the run since its upload, oldest first")

    @staticmethod
    def resolve_logfiles(run: Run) -> list:
        return list(run.logfiles.defer("trace"))  # a trace's breakdown is in `parsed`; the file's copy stays

    @staticmethod
    def resolve_edits(run: Run) -> list:
        return [{"what": e.what, "before": e.before, "after": e.after, "at": e.edited_at,
                 "by": e.edited_by.get_username() if e.edited_by else None}
                for e in run.edits.select_related("edited_by")]


class RunStatusOut(Schema):
    id: int
    status: StatusName
    error: str = Field(description="why the run, or some of its files, failed: file and reason, one line per "
                       "failed file (also while the run is ready from its other files)")
    failed_files: int = Field(0, description="log files that failed; a `ready` run with some holds the others' "
                              "figures only")
    logfiles: list[LogFileStatusOut]
    verdict: VerdictOut | None = Field(None, description="once ready: the verdict against the run's "
                                       "baseline, as GET /runs/{id}/verdict")

    @staticmethod
    def resolve_logfiles(run: Run) -> list:
        return list(run.logfiles.all())

    @staticmethod
    def resolve_verdict(run: Run) -> dict | None:
        return getattr(run, "verdict", None)


class TagsIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    tags: list[Annotated[Text, Field(max_length=64)]] = Field(
        max_length=100, description="the run's tags from now on (replaces the old ones)",
    )


class TracePhasesIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    phases: dict[Annotated[Text, Field(min_length=1, max_length=200)], Annotated[Text, Field(max_length=100)]] = Field(
        max_length=200, description='{range name: phase} for the run\'s profiler traces, "" for a range that is '
        "no phase; replaces the run's mapping (names left out go back to runlens's own guess)",
        # as RolesIn: the key pattern published as propertyNames, or a NUL key would look valid
        json_schema_extra={"additionalProperties": False,
                           "propertyNames": {"pattern": r"^[^\x00]*$", "minLength": 1, "maxLength": 200}})


class RunEditOut(Schema):
    what: str = Field(description="what was changed: tags, trace_phases")
    before: list[str]
    after: list[str]
    by: str | None = Field(description="who changed it (None: the user was deleted)")
    at: datetime


class TagsOut(Schema):
    id: int
    tags: list[str]
    history: list[RunEditOut] = Field(description="every replacement of the run's tags, oldest first")


AnnotationKind = Literal["note", "nccl", "steps"]


class AnnotationIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    kind: AnnotationKind = Field(
        default="note",  # Annotation.Kind.NOTE as the Literal the field is typed with
        description="note: markdown text. nccl: `env | grep NCCL` output or NCCL_X=value lines, declared "
        "settings of the run (editors). steps: one integer, the run's draft step count (editors).",
    )
    body: Text = Field(min_length=1, max_length=100_000)
    parent: int | None = Field(None, ge=1, le=MAX_ID, description="the annotation this one replies to")
    window_from: int | None = Field(None, ge=0, le=10_000_000, description="first window of the anchor")
    window_to: int | None = Field(None, ge=0, le=10_000_000, description="last window of the anchor")
    phase: Annotated[str, Field(max_length=100, pattern=r"^[^\x00]*$")] = Field(
        "", description="the phase or figure the anchor is about")


class AnnotationPatchIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    body: Text = Field(min_length=1, max_length=100_000)


class AnnotationOut(Schema):
    id: int
    kind: AnnotationKind
    body: str
    body_html: str = Field(description="the markdown rendered and sanitised")
    author: str | None
    created_at: datetime
    edited_at: datetime | None
    deleted: bool
    parent: int | None = Field(None, alias="parent_id")
    window_from: int | None
    window_to: int | None
    phase: str

    warnings: list[str] = Field(default_factory=list, description="things to check in what was sent (new only)")

    @staticmethod
    def resolve_warnings(annotation: Annotation) -> list[str]:
        return getattr(annotation, "warnings", [])

    @staticmethod
    def resolve_author(annotation: Annotation) -> str | None:
        return annotation.author.get_username() if annotation.author else None

    @staticmethod
    def resolve_body_html(annotation: Annotation) -> str:
        return markdown.render(annotation.body)

    @staticmethod
    def resolve_deleted(annotation: Annotation) -> bool:
        return annotation.deleted_at is not None


RoleName = Literal["viewer", "editor", "admin"]


class ProjectOut(Schema):
    id: int
    name: str
    role: RoleName | None = Field(description="your role in it")
    created_at: datetime


class MemberIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    username: Text = Field(min_length=1, max_length=254, description="a username, or an e-mail address: "
                          "they are invited, and join when they accept")
    role: RoleName = "viewer"


class InvitationOut(Schema):
    id: int
    project_id: int
    project: str = Field(description="the project's name")
    invitee: str = Field(description="the username or e-mail address invited, as the admin typed it "
                         "(e-mail in lower case)")
    role: RoleName
    invited_by: str | None = Field(description="the admin who invited")
    created_at: datetime

    @staticmethod
    def resolve_project(i: Invitation) -> str:
        return i.project.name

    @staticmethod
    def resolve_invited_by(i: Invitation) -> str | None:
        return i.invited_by.get_username() if i.invited_by else None


class RoleIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    role: RoleName


class MemberOut(Schema):
    username: str
    email: str
    role: RoleName

    @staticmethod
    def resolve_username(m: Membership) -> str:
        return m.user.get_username()

    @staticmethod
    def resolve_email(m: Membership) -> str:
        return m.user.email


def _iso_text(value: Any) -> Any:
    # JSON has no datetime: take ISO 8601 text only, not a number pydantic would read as epoch seconds.
    if value is not None and not isinstance(value, str):
        raise ValueError("expected an ISO 8601 date-time string")
    return value


# A stored date-time is read back in UTC and shown in TIME_ZONE: one whose UTC value falls outside
# Python's years 1-9999 (9999-12-31T23:59:59-14:00 is year 10000 in UTC) is kept by PostgreSQL and
# then breaks every read of its row. Expiries are held to years a token can live in.
EARLIEST_EXPIRY = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_EXPIRY = datetime(9999, 1, 1, tzinfo=UTC)


def _expiry_in_range(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    try:
        utc = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST_EXPIRY <= utc < LATEST_EXPIRY:
        raise ValueError(f"must fall between {EARLIEST_EXPIRY:%Y-%m-%d} and {LATEST_EXPIRY:%Y-%m-%d} (UTC)")
    return utc


class TokenIn(Schema):
    model_config = ConfigDict(extra="forbid")  # not strict: expires_at arrives as ISO 8601 text

    name: Text = Field(min_length=1, max_length=100)
    expires_at: Annotated[datetime | None, BeforeValidator(_iso_text), AfterValidator(_expiry_in_range)] = Field(
        None, description="when it stops working (1970-01-01 to 9999-01-01 UTC); none: never")


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None


class TokenCreatedOut(TokenOut):
    token: str = Field(description="the secret: shown in this answer only")


class DeletedOut(Schema):
    id: int
    deleted: bool = True



# Query examples are `example` strings: ninja copies a field's `examples` list onto the parameter,
# where OpenAPI wants a map of named examples (openapi.json would not validate).
class CompareQuery(Schema):
    runs: str = Field(..., pattern=r"^\d{1,18}(,\d{1,18}){0,19}$", description="run ids, comma-separated (up to 20)",
                      json_schema_extra={"example": "3,7,9"})
    baseline: int | None = Field(None, ge=1, le=MAX_ID, description="the baseline run (default: the first)")


UploadRole = Literal["serving worker", "serving launcher", "benchmark client", "nccl-tests", "unknown"]
FileRoleName = Literal["serving worker", "serving launcher", "benchmark client", "nccl-tests", "unknown", ""]


class RolesIn(Schema):
    model_config = ConfigDict(extra="forbid")  # as every body: a NUL in an unread extra is still refused

    roles: dict[Annotated[Text, Field(max_length=255)], FileRoleName] = Field(
        max_length=200, description=(
            "{log file id or name: role}; role one of serving worker, serving launcher, benchmark client, "
            "nccl-tests, unknown, or \"\" to go back to the detected roles"),
        json_schema_extra={"additionalProperties": False,
                           "propertyNames": {"pattern": r"^[^\x00]*$", "maxLength": 255}})


class SplitOut(Schema):
    id: int = Field(description="the run split (it keeps its first launch)")
    runs: list[RunOut] = Field(description="the new runs, one per other launch")


# Getting a run in: upload metadata, register by path, refresh.

NcclName = Annotated[str, Field(pattern=NCCL_KEY.pattern, max_length=64)]


def _whole(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


# A JSON integer: 3 or 3.0 (JSON Schema's "integer"), never true or "3" (the models are strict).
Whole = Annotated[int, BeforeValidator(_whole)]


def _nullable(schema: dict) -> None:
    """`int | None` as {"type": ["integer", "null"]}, not anyOf: Schemathesis's negative mode turns an
    anyOf branch into null and then expects the (valid) request to be refused."""
    branches = schema.pop("anyOf")
    value = next(b for b in branches if b.get("type") != "null")
    schema.update(value, type=[value["type"], "null"])


class CiIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    # default= by name: mypy sees a positional default as none, and CiIn() below needs all three.
    commit: Text = Field(default="", max_length=100)
    branch: Text = Field(default="", max_length=255)
    url: Text = Field(default="", max_length=2000, description="the CI job's page")

    def stored(self) -> dict[str, str]:
        return self.model_dump(exclude_defaults=True)


class BranchBaselineIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    branch: Text = Field(..., min_length=1, max_length=255, description="the latest ready run of this "
                         "branch (its `ci.branch`) in the project, uploaded before this one")


Baseline = Annotated[int, Field(ge=1, le=MAX_ID), BeforeValidator(_whole)] | Literal["pinned"] | BranchBaselineIn


class RunMetaIn(Schema):
    """What a client says about a new run (the `meta` JSON of an upload; the body of a register)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Text = Field("", max_length=200, description="default: the first file's name")
    project: Text = Field("", max_length=100, description=(
        "default: your first project you may upload to. A name that is not one of your projects is "
        "404 `unknown_project` (whether or not someone else has it), unless `create_project`"))
    create_project: bool = Field(False, description=(
        "create `project` (you its admin) if no project has that name; a name someone else has is "
        "409 `project_name_taken`"))
    tags: list[Annotated[Text, Field(max_length=64)]] = Field([], max_length=100)
    steps: Annotated[int, Field(ge=1, le=16), BeforeValidator(_whole)] | None = Field(
        None, description="draft steps per cycle, when the logs do not say", json_schema_extra=_nullable,
    )
    nccl_env: dict[NcclName, Annotated[Text, Field(max_length=512)] | Whole] = Field(
        {}, max_length=200,
        description="NCCL variables the launcher set, {\"NCCL_PROTO\": \"LL\"}: the run's declared NCCL settings",
        json_schema_extra={"additionalProperties": False,
                           "propertyNames": {"pattern": NCCL_KEY.pattern, "maxLength": 64}},
    )
    notes: Text = Field("", max_length=100_000)
    ci: CiIn = Field(default_factory=CiIn)
    roles: dict[Annotated[Text, Field(max_length=255)], UploadRole] = Field(
        {}, max_length=200,
        description="who wrote each file, when detection is wrong: {\"server.log\": \"serving worker\"}",
        # pydantic puts the key pattern in patternProperties only: a key outside it (a NUL) would
        # then take any value in the published schema, which the server refuses (422).
        json_schema_extra={"additionalProperties": False,
                           "propertyNames": {"pattern": r"^[^\x00]*$", "maxLength": 255}},
    )
    baseline: Baseline = Field(
        "pinned", description='what the run\'s verdict compares against: a run id, "pinned" (the project\'s '
        'pinned baseline, also the default) or {"branch": "main"}',
    )

    def stored(self) -> dict:
        """The run's `meta`: CI details and the baseline it asked for."""
        meta: dict = {"ci": ci} if (ci := self.ci.stored()) else {}
        if "baseline" in self.model_fields_set:
            meta["baseline"] = self.baseline if not isinstance(self.baseline, BranchBaselineIn) else \
                self.baseline.model_dump()
        return meta


class RegisterIn(RunMetaIn):
    path: Text = Field(
        max_length=65536,
        description="absolute path of a log file on the server, under one of RUNLENS_LOG_ROOTS",
    )


class RunCreatedOut(Schema):
    id: int
    status: StatusName
    url: str = Field(description="the run's page")
    created: bool = Field(description="false when the same upload (content or Idempotency-Key) or the "
                          "same registered path gave back an existing run")


class RefreshQuery(Schema):
    replace: bool = Field(False, description=(
        "read rotated or truncated logs as they are now, replacing the rows read before"))


class RefreshOut(Schema):
    id: int
    status: StatusName
    changed: bool = Field(description="a log grew (or `replace`): the run is parsed again")
    kept: list[str] = Field(description=(
        "why logs were not read again (rotated or truncated: they shrank or bytes they had changed); "
        "their old rows are kept"))


class SweepQuery(Schema):
    runs: str | None = Field(None, pattern=r"^\d{1,18}(,\d{1,18})*$", max_length=4000,
                             description="run ids, comma-separated (up to 200)",
                             json_schema_extra={"example": "3,7,9"})
    project: Text | None = Field(None, max_length=100, description="all ready runs of this project (without `runs`)")
    tag: Text | None = Field(None, max_length=64, description="with `project`: only runs with this tag")


class VerdictQuery(Schema):
    metric: str = Field("throughput_tok_s", max_length=100, pattern=r"^[\w:. /-]+$",
                        description="the figure the gate checks: throughput_tok_s, tokens_per_cycle, cycle_ms, "
                        "verify_ms or phase:NAME")
    fail_on_regression: float | None = Field(None, ge=0, le=1000, description="with it, `gate` says whether "
                                             "`metric` got worse by more than this % beyond the noise")


class FigureTextOut(Schema):
    value: str
    baseline: str
    delta: str
    delta_pct: str
    noise: str
    worse_beyond_noise_pct: str


class VerdictFigureOut(Schema):
    key: str = Field(description="throughput_tok_s, tokens_per_cycle, cycle_ms, verify_ms or phase:NAME")
    label: str
    unit: str
    better: Literal["higher", "lower"]
    value: float | None
    baseline: float | None
    delta: float | None
    delta_pct: float | None
    noise: float | None = Field(description="the larger of the two runs' noise (half the interquartile range)")
    significant: bool = Field(description="beyond the noise and at least 1%")
    direction: Literal["better", "worse"] | None
    worse_beyond_noise_pct: float
    text: FigureTextOut = Field(description="each number as the pages write it (one rounding everywhere): "
                                "print these rather than rounding the numbers again")


class NcclDriftOut(Schema):
    key: str
    declared: str | None
    effective: str | None = Field(description="what a worker had instead; null: it never got the variable")
    ranks: list[str] = Field(description="the ranks that did not get the declared value")
    launch: int | None = Field(None, description="the serving launch, when the run holds several")


class NcclDifferenceOut(Schema):
    key: str
    run: str | None = Field(description="this run's workers' value; null: not set")
    baseline: str | None = Field(description="the baseline's workers' value; null: not set")


class VerdictNcclOut(Schema):
    status: str = Field(description="the run's NCCL status: ok, drift, several or unknown")
    baseline_status: str | None = Field(description="the baseline's, null without a baseline")
    drift: list[NcclDriftOut] = Field(description="variables the launcher declared that the workers did not get")
    differs: list[NcclDifferenceOut] | None = Field(
        description="effective variables whose value differs from the baseline's workers' (a configuration "
        "difference: the runs are not comparable); null when either run's settings are unknown")
    alarm: bool = Field(description="the run drifted: --fail-on-drift fails on this")
    short: str = Field(description="the finding in a few words, as `title` ends; \"\" when there is none")
    sentence: str = Field(description="the drift in a sentence, as `headline` opens; \"\" without drift")


class VerdictBaselineOut(Schema):
    id: int
    name: str


class GateOut(Schema):
    metric: str
    threshold_pct: float
    fail: bool
    text: str


class VerdictOut(Schema):
    run: int
    baseline: VerdictBaselineOut | None
    baseline_how: str
    verdict: Literal["regression", "improvement", "no change", "not comparable", "pending"]
    reasons: list[str]
    figures: list[VerdictFigureOut]
    headline: str = Field(description="the verdict in a sentence, an NCCL drift first")
    title: str = Field(description="`runlens: <verdict>` and the NCCL finding: a CI summary's first line")
    nccl: VerdictNcclOut
    compare_url: str | None = Field(None, description="the comparison page (GET /runs/{id}/verdict only)")
    run_url: str | None = Field(None, description="the run's page (GET /runs/{id}/verdict only)")
    gate: GateOut | None = Field(None, description="with fail_on_regression (GET /runs/{id}/verdict only)")


class PinIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    pinned: bool = Field(description="true: this run becomes the project's pinned baseline; false: unpin it")


class PinOut(Schema):
    project: str
    pinned_baseline: int | None = Field(description="the project's pinned baseline run, if any")

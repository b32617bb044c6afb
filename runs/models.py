"""The domain: projects, runs, their log files and every row parsed from them.

Every parsed row keeps its log file and line number (provenance). Run carries the summary
figures so lists sort and filter without joins; only ingest.services writes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from runs.names import clean_name, name_key


class Project(models.Model):
    name = models.CharField(max_length=100, unique=True)
    # One name per look (runs/names.py): `Team-B-Private` or `team-b-privatе` (Cyrillic е) beside
    # `team-b-private` is refused by this constraint, not by a check that a race could pass.
    name_key = models.TextField(unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="projects")
    # The run CI uploads compare against when they say `meta.baseline = "pinned"` (or name none).
    pinned_baseline = models.ForeignKey("Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # The admin's form: a look-alike of another project's name is a form error, not an IntegrityError.
        if Project.objects.filter(name_key=name_key(self.name)).exclude(pk=self.pk).exists():
            raise ValidationError({"name": "a project with this name, or one that looks the same, exists"})

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.name = clean_name(self.name)
        self.name_key = name_key(self.name)
        if kwargs.get("update_fields") is not None and "name" in kwargs["update_fields"]:
            kwargs["update_fields"] = {*kwargs["update_fields"], "name_key"}
        super().save(*args, **kwargs)


class Membership(models.Model):
    """A user's role in a project; each role may do what the ones below it may (runs/permissions.py)."""

    class Role(models.TextChoices):
        VIEWER = "viewer"  # read, annotate
        EDITOR = "editor"  # also upload, tag, set steps/NCCL, delete own runs, reparse
        ADMIN = "admin"  # also members and roles, delete any run, project settings

    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.EDITOR)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")]


class Invitation(models.Model):
    """A project admin's offer of a role to a username or e-mail address; nobody is a member until
    they accept it. Kept as the admin typed it and matched to accounts only when someone reads their
    own invitations: inviting looks the same whether or not the account exists, and says nothing
    about it to the inviter (runs.services.invite)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    invitee = models.CharField(max_length=254)  # a username, or an e-mail address in lower case
    role = models.CharField(max_length=10, choices=Membership.Role.choices, default=Membership.Role.VIEWER)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "invitee"], name="one_invitation_per_invitee")]


class Tag(models.Model):
    name = models.CharField(max_length=64, unique=True)

    def __str__(self) -> str:
        return self.name


class Status(models.TextChoices):
    QUEUED = "queued"
    PARSING = "parsing"
    READY = "ready"
    FAILED = "failed"


class Run(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    tags = models.ManyToManyField(Tag, blank=True, related_name="runs")
    notes = models.TextField(blank=True)
    meta = models.JSONField(default=dict, blank=True)  # upload metadata: ci{commit, branch, url}, ...
    error = models.TextField(blank=True)
    # Not a field: GET /runs/{id}/status sets it on a ready run for RunStatusOut to read.
    verdict: dict

    # Summary figures (medians over windows), written by ingest.services after each parse.
    engine = models.CharField(max_length=32, blank=True)
    spec_algorithm = models.CharField(max_length=32, blank=True)
    steps = models.PositiveSmallIntegerField(null=True, blank=True)
    steps_source = models.CharField(max_length=300, blank=True)  # "x.log line 12" or "set by alice at ..."
    # A person set the step count (upload metadata, annotation): it wins over what the logs say.
    steps_by_person = models.BooleanField(default=False)
    # A person's step count or NCCL declaration differs from what the logs say (shown, not hidden).
    person_conflict = models.BooleanField(default=False)
    throughput_tok_s = models.FloatField(null=True, blank=True)
    tokens_per_cycle = models.FloatField(null=True, blank=True)
    cycle_ms = models.FloatField(null=True, blank=True)
    verify_ms = models.FloatField(null=True, blank=True)
    verify_pct = models.FloatField(null=True, blank=True)
    windows = models.PositiveIntegerField(null=True, blank=True)
    nccl_status = models.CharField(max_length=10, blank=True)  # ok / drift / unknown
    # parsed["launches_count"], for lists (they never load `parsed`): 2 or more blend launches.
    launches_count = models.PositiveSmallIntegerField(default=0)
    # Log files of the run that failed, kept with the status (lists show it): a run is `ready`
    # when one file parsed, and says beside that status how many did not (their reasons: `error`).
    failed_files = models.PositiveSmallIntegerField(default=0)
    # The whole parse JSON of the run (DESIGN "Contract" shape) plus settings with their sources:
    # summaries, not every row (collectives capped). Lists defer it (runs.queries).
    parsed = models.JSONField(default=dict, blank=True)
    # What refresh_run worked out that a partial refresh needs again (runs.services.refresh_nccl):
    # {"figured": [launches that had serving figures before worker-only ones were merged]}.
    summary_state = models.JSONField(default=dict, blank=True)
    # What the pages chart, thinned to a bounded number of points per trace, each point with its
    # window, line and log file (runs/series.py); written by refresh_run. Lists defer it.
    series = models.JSONField(null=True, blank=True, editable=False)
    # A person's word on which profiler-trace ranges are which phases: {range name: phase, "" =
    # not a phase}; wins over runs/traces.py PHASE_NAMES. Changes are recorded as RunEdits.
    trace_phases = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "-created_at"]),
            models.Index(fields=["throughput_tok_s"]),
            models.Index(fields=["verify_ms"]),
        ]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"

    @property
    def is_busy(self) -> bool:
        return self.status in (Status.QUEUED, Status.PARSING)


class LogFile(models.Model):
    class Kind(models.TextChoices):
        LOG = "log"
        TRACE = "trace"  # a PyTorch profiler (Kineto) trace: read by ingest/parsers/trace.py, not the log parsers

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="logfiles")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.LOG)
    original_name = models.CharField(max_length=255)  # shown escaped; never used as a path
    # Relative to RUNLENS_DATA_DIR for uploads; absolute (under a LOG_ROOT) when registered.
    path = models.CharField(max_length=1024)
    registered = models.BooleanField(default=False)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, db_index=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    # The Celery task id holding the claim: the same message delivered again after its worker
    # died may take the claim over; any other delivery finds it taken.
    claim_token = models.CharField(max_length=64, blank=True)
    # Refreshed by the parsing worker every RUNLENS_HEARTBEAT_SECONDS: a claim whose heartbeat
    # is older than RUNLENS_CLAIM_STALE_SECONDS belongs to a dead worker and is taken over.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    parsed_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_line = models.PositiveIntegerField(null=True, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    formats = models.JSONField(default=list, blank=True)
    settings = models.JSONField(default=dict, blank=True)  # {key: {value, line, source}}
    # Who wrote the lines: {"processes": {tag: {pid, host, rank, role, ...}}, "launch_lines": [...]}.
    processes = models.JSONField(default=dict, blank=True)
    # A person's correction of the role of this file's processes (runs/layout.py ROLES); "" = detected.
    role = models.CharField(max_length=20, blank=True)
    lines = models.PositiveIntegerField(default=0)
    # Registered logs: sha256 of the first HEAD_BYTES as last read (with `size` and `sha256`), so a
    # refresh tells a log that grew from one that was rotated or truncated (ingest.services).
    head_sha256 = models.CharField(max_length=64, blank=True)
    # Why the last refresh kept the old rows instead of reading the file ("" when it did not).
    refresh_warning = models.TextField(blank=True)
    # A trace file's breakdown by range and cycle (ingest/parsers/trace.py); null for logs.
    trace = models.JSONField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        # Reading files off the server is a grant of its own, not a side effect of creating a
        # project (every user administers the personal project of their first upload).
        permissions = [("register_path", "Can register logs by server path (under RUNLENS_LOG_ROOTS)")]

    def __str__(self) -> str:
        return self.original_name


class _Parsed(models.Model):
    """Columns every parsed row has: its run, its log file and the line it came from."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE)
    logfile = models.ForeignKey(LogFile, on_delete=models.CASCADE, null=True, blank=True)
    line = models.PositiveIntegerField(null=True, blank=True)
    process = models.CharField(max_length=64, blank=True)  # the writer's tag in its log file

    class Meta:
        abstract = True


# The bulk rows (millions a run) keep no database FK constraint. Checked per row, a COPY'd row
# looks its run and log file up, and Django's deferred constraints queue millions of checks to
# the commit, where they would cost a large part of an ingest. The store path writes them while it
# holds its log file's row locked, delete_run takes the same lock first, and deletes cascade in
# Django as before. The run's own index is the prefix of each table's composite one.
class SampleBlock(models.Model):
    """Up to BLOCK_ROWS phase or metric rows of one log file, of one name and source, as
    compressed columns (runs/blocks.py): a 512 MB log's 9.5M values are ~150 blocks, not 9.5M
    rows. Each row in a block keeps its window, line and process (provenance). The one stored
    form of these rows, written and read through runs/columns.py only."""

    class Kind(models.TextChoices):
        PHASE = "phase"
        METRIC = "metric"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    logfile = models.ForeignKey(LogFile, on_delete=models.CASCADE, related_name="blocks")
    kind = models.CharField(max_length=6, choices=Kind.choices)
    name = models.CharField(max_length=100)
    source = models.CharField(max_length=32)
    seq = models.PositiveIntegerField()  # the order the file's blocks were cut in
    rows = models.PositiveIntegerField()
    window_lo = models.PositiveIntegerField()
    window_hi = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        indexes = [models.Index(fields=["run", "kind", "name"], name="block_run_kind_name")]
        constraints = [models.UniqueConstraint(fields=["logfile", "seq"], name="block_logfile_seq")]


class NcclSetting(_Parsed):
    class Kind(models.TextChoices):
        DECLARED = "declared"
        EFFECTIVE = "effective"

    key = models.CharField(max_length=64)
    value = models.CharField(max_length=512)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    rank = models.CharField(max_length=32, blank=True)
    source = models.CharField(max_length=200)  # "launch prefix", "nccl echo", "annotation by alice at ..."
    # Role of the process the value came from, written when the run's summary is computed: the
    # run list's KEY=VALUE filter matches serving workers only.
    role = models.CharField(max_length=20, blank=True)

    class Meta:
        indexes = [models.Index(fields=["run", "key"], name="nccl_run_key")]


class CollectiveResult(_Parsed):
    # A bulk table (512 MB of nccl-tests outputs: 2.3M rows): no database FK constraint, as
    # above (the two checks a row were half of PostgreSQL's time storing them), and no index of
    # the run's own (the prefix of collective_run_line).
    run = models.ForeignKey(Run, on_delete=models.CASCADE, db_constraint=False, db_index=False)
    logfile = models.ForeignKey(LogFile, on_delete=models.CASCADE, null=True, blank=True, db_constraint=False)
    op = models.CharField(max_length=32)
    size_bytes = models.BigIntegerField()
    count = models.BigIntegerField()
    dtype = models.CharField(max_length=16)
    redop = models.CharField(max_length=16)
    root = models.IntegerField()
    # One row a table line, both its sides (nccl-tests prints the out-of-place and the in-place
    # results of one collective on one line): half the rows of a row a side, whose COPY was most
    # of PostgreSQL's time storing 512 MB of nccl-tests outputs (2.35M rows: 10.4 s of its CPU,
    # 5.9 s as 1.18M rows a line). `sides` says which sides the row holds (OUT_OF_PLACE,
    # IN_PLACE, a bit each); a side it lacks has nulls. Readers see a row a side (collective_values).
    time_us = models.FloatField(null=True)  # the out-of-place side
    algbw_gbs = models.FloatField(null=True)
    busbw_gbs = models.FloatField(null=True)
    wrong = models.BigIntegerField(null=True)
    ip_time_us = models.FloatField(null=True)  # the in-place side
    ip_algbw_gbs = models.FloatField(null=True)
    ip_busbw_gbs = models.FloatField(null=True)
    ip_wrong = models.BigIntegerField(null=True)
    sides = models.PositiveSmallIntegerField()

    OUT_OF_PLACE, IN_PLACE = 1, 2
    # A side's own columns, as (out-of-place, in-place) column names.
    SIDE_FIELDS = (("time_us", "ip_time_us"), ("algbw_gbs", "ip_algbw_gbs"), ("busbw_gbs", "ip_busbw_gbs"),
                   ("wrong", "ip_wrong"))

    class Meta:
        # What every read asks: a run's rows (or several runs'), by file and line. Rows are written
        # in that order, each at the index's end; an index on (run, op, size) (a text compared by
        # the database's collation, sizes out of order) cost a COPY over twice this one's upkeep.
        indexes = [models.Index(fields=["run", "logfile", "line"], name="collective_run_line")]


def collective_values(found: Any, *fields: str) -> Iterator[dict[str, Any]]:
    """`found` (a query of CollectiveResult) as a row a side, as the parser gave them: the
    out-of-place side first, then the in-place one; each a dict of `fields` in their order, a
    side's columns by their out-of-place names and `in_place` for the side."""
    side = dict(CollectiveResult.SIDE_FIELDS)
    stored = [f for f in fields if f != "in_place"]
    inner = [side[f] for f in stored if f in side]
    for row in found.values(*stored, *inner, "sides").iterator(chunk_size=10_000):
        if row["sides"] & CollectiveResult.OUT_OF_PLACE:
            yield {f: False if f == "in_place" else row[f] for f in fields}
        if row["sides"] & CollectiveResult.IN_PLACE:
            yield {f: True if f == "in_place" else row[side[f]] if f in side else row[f] for f in fields}


class CollectiveIsland(models.Model):
    """A run of adjacent nccl-tests row lines with a bus bandwidth, of one log file and process:
    its first and last line, its rows and their highest bus bandwidth (runs.digest.Busbw's unit).
    Found by the worker as it spools the rows (runs.digest.BusbwIslands) and stored with them,
    so that a run's refresh reads an island a row (a table of a test each) instead of grouping
    the run's rows in SQL (1.15M lines of 512 MB of nccl-tests outputs, at every refresh)."""

    # Tens of thousands a file (150k in 512 MB of nccl-tests outputs): no database FK constraint,
    # as the rows' own (two checks a row were most of PostgreSQL's time storing them).
    run = models.ForeignKey(Run, on_delete=models.CASCADE, db_constraint=False, db_index=False)
    logfile = models.ForeignKey(LogFile, on_delete=models.CASCADE, null=True, blank=True, db_constraint=False)
    process = models.CharField(max_length=64, blank=True)
    first_line = models.PositiveIntegerField()
    last_line = models.PositiveIntegerField()
    rows = models.BigIntegerField()
    peak_busbw_gbs = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["run", "logfile", "first_line"], name="island_run_line")]


class Annotation(models.Model):
    class Kind(models.TextChoices):
        NOTE = "note"
        NCCL = "nccl"
        STEPS = "steps"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="annotations")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.NOTE)
    body = models.TextField()  # markdown, rendered by runs/markdown.py (raw HTML off, sanitised)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set by runs.services.add_annotation for the answer to its request; not stored.
    warnings: list[str]
    # A reply names the note it answers (one level of threading is shown; deeper replies nest).
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    # Anchor on the run's over-the-run charts: a window range and optionally a phase or figure.
    window_from = models.PositiveIntegerField(null=True, blank=True)
    window_to = models.PositiveIntegerField(null=True, blank=True)
    phase = models.CharField(max_length=100, blank=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    # A deleted note that others replied to keeps its place in the thread, with its text gone.
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    @property
    def anchored(self) -> bool:
        return self.window_from is not None


class AnnotationEdit(models.Model):
    """The text an annotation had before an edit (its history, oldest first)."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="edits")
    body = models.TextField()
    edited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    edited_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["edited_at", "id"]


class RunEdit(models.Model):
    """A change a person made to a run after its upload (its tags replaced, its log files' roles
    corrected): who, when, before and after. The run page and the activity feed show them, like
    an annotation's edit history. Tags: before/after are the tag lists. Roles: {"roles": {file:
    role, "" = detected}, "figures": {figure: value}}, the figures being those the change moved."""

    class What(models.TextChoices):
        TAGS = "tags"
        TRACE_PHASES = "trace_phases"  # before/after: ["range name=phase", ...]
        ROLES = "roles"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="edits")
    what = models.CharField(max_length=20, choices=What.choices)
    before = models.JSONField(default=list)
    after = models.JSONField(default=list)
    edited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    edited_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["edited_at", "id"]


class ApiToken(models.Model):
    """A bearer token for CI. Only a SHA-256 of the secret is stored (RELIABILITY A5)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)  # public part, for lookup
    token_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)


def visible_runs(user) -> models.QuerySet[Run]:
    """Runs the user may see: those of projects they belong to (everything for superusers)."""
    runs = Run.objects.all()
    if user.is_superuser:
        return runs
    return runs.filter(Q(project__membership__user=user))

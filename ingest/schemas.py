"""Input and output schemas of the ingest API (ingest/api.py): upload, register, refresh."""

from __future__ import annotations

from typing import Annotated, Literal

from ninja import Field, Schema
from pydantic import BeforeValidator, ConfigDict

from ingest.services import NCCL_KEY
from runs.schemas import MAX_ID, StatusName, Text

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

    commit: Text = Field("", max_length=100)
    branch: Text = Field("", max_length=255)
    url: Text = Field("", max_length=2000, description="the CI job's page")

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
    project: Text = Field("", max_length=100, description="default: your first project")
    tags: list[Annotated[Text, Field(max_length=64)]] = Field([], max_length=100)
    steps: Annotated[int, Field(ge=0, le=32767), BeforeValidator(_whole)] | None = Field(
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
    path: str = Field(
        max_length=65536,
        description="absolute path of a log file on the server, under one of RUNLENS_LOG_ROOTS",
    )


class RunCreatedOut(Schema):
    id: int
    status: StatusName
    url: str = Field(description="the run's page")
    created: bool = Field(description="false when the same upload (content or Idempotency-Key) or the "
                          "same registered path gave back an existing run")


class RefreshOut(Schema):
    id: int
    status: StatusName
    changed: bool = Field(description="the file had changed: its run is parsed again")

"""Input and output schemas of the ingest API (ingest/api.py): upload, register, refresh."""

from __future__ import annotations

from typing import Annotated

from ninja import Field, Schema
from pydantic import ConfigDict, field_validator

from ingest.services import NCCL_KEY
from runs.schemas import StatusName, Text


class CiIn(Schema):
    model_config = ConfigDict(extra="forbid")

    commit: Text | None = Field(None, max_length=100)
    branch: Text | None = Field(None, max_length=255)
    url: Text | None = Field(None, max_length=2000, description="the CI job's page")


class RunMetaIn(Schema):
    """What a client says about a new run (the `meta` JSON of an upload; the body of a register)."""

    model_config = ConfigDict(extra="forbid")

    name: Text = Field("", max_length=200, description="default: the first file's name")
    project: Text | None = Field(None, max_length=100, description="default: your first project")
    tags: list[Annotated[Text, Field(max_length=64)]] = Field([], max_length=100)
    steps: int | None = Field(None, ge=0, le=32767, description="draft steps per cycle, when the logs do not say")
    nccl_env: dict[Annotated[Text, Field(max_length=64)], Annotated[Text, Field(max_length=512)]] = Field(
        {}, max_length=200,
        description="NCCL variables the launcher set, {\"NCCL_PROTO\": \"LL\"}: the run's declared NCCL settings",
    )
    notes: Text = Field("", max_length=100_000)
    ci: CiIn | None = None

    @field_validator("nccl_env", mode="before")
    @classmethod
    def _numbers_as_text(cls, value: object) -> object:
        # {"NCCL_BUFFSIZE": 16777216} means the same as "16777216".
        if isinstance(value, dict):
            return {k: str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                    for k, v in value.items()}
        return value

    @field_validator("nccl_env")
    @classmethod
    def _nccl_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not NCCL_KEY.match(key):
                raise ValueError(f"{key!r} is not an NCCL variable name (NCCL_...)")
        return value


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

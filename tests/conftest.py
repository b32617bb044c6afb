"""Shared fixtures: golden files, sample paths, personas (alice owns, bob is in the team, eve is not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.samples import DATA


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-golden", action="store_true",
        help="rewrite tests/data/golden/*.json from the current parser output (then review the diff)",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare a JSON-able value with tests/data/golden/<name>.json (or rewrite it with --regen-golden)."""

    def check(name: str, value: object) -> None:
        path = DATA / "golden" / f"{name}.json"
        text = json.dumps(value, indent=1, sort_keys=True) + "\n"
        if request.config.getoption("--regen-golden") or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        assert json.loads(text) == json.loads(path.read_text()), f"differs from {path}"

    return check


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    """Each test stores logs in its own data dir."""
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    return settings.DATA_DIR


def _user(django_user_model, name: str):
    return django_user_model.objects.create_user(username=name, password=f"{name}-pw")


@pytest.fixture
def alice(db, django_user_model):
    """Owns the project `team`."""
    from runs.models import Membership, Project

    user = _user(django_user_model, "alice")
    project = Project.objects.create(name="team")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def bob(alice, django_user_model):
    """A member of alice's project."""
    from runs.models import Membership, Project

    user = _user(django_user_model, "bob")
    Membership.objects.create(project=Project.objects.get(name="team"), user=user)
    return user


@pytest.fixture
def eve(db, django_user_model):
    """Outside the team: must never see its runs."""
    return _user(django_user_model, "eve")


@pytest.fixture
def upload_run(data_dir):
    """Register a run from sample logs as `user` (parse it too unless parse=False)."""
    from ingest import services

    def make(user, *names: str, parse: bool = True, project: str | None = "team", **kw):
        from tests.samples import log_path

        handles = [open(log_path(n), "rb") for n in names]
        try:
            run = services.register_upload(
                user, [services.IncomingFile(n.split("/")[-1], h, log_path(n).stat().st_size)
                       for n, h in zip(names, handles)],
                project=project, **kw,
            )
        finally:
            for h in handles:
                h.close()
        if parse:
            for lf in run.logfiles.all():
                services.parse_logfile(lf.id)
            run.refresh_from_db()
        return run

    return make


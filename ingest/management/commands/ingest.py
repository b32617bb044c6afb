import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError

from ingest import registration, storage
from runs.models import Run, Status
from runs.services import ServiceError


class Command(BaseCommand):
    help = "Create a run from log files (queued for the Celery worker; --wait to wait for the parse)."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--name", default="")
        parser.add_argument("--tag", action="append", default=[], dest="tags")
        parser.add_argument("--project", default=None, help="one of the user's projects (default: their first)")
        parser.add_argument("--create-project", action="store_true",
                            help="create --project (the user its admin) if no project has that name")
        parser.add_argument("--user", default=None, help="owner (default: the first superuser)")
        parser.add_argument("--wait", action="store_true", help="wait until the run is ready or failed")
        parser.add_argument("--timeout", type=float, default=300)

    def handle(self, *args, paths, name, tags, project, create_project, user, wait, timeout, **options):
        owner = self._user(user)
        handles = []
        try:
            for p in paths:
                handles.append(open(p, "rb"))
            files = [registration.IncomingFile(p.name, h, p.stat().st_size)
                     for p, h in zip(paths, handles, strict=True)]
            run, _ = registration.register_upload(owner, files, name=name, project=project, tags=tags,
                                              create_project=create_project)
        except (OSError, storage.StorageError, PermissionError, PermissionDenied) as e:
            raise CommandError(str(e)) from None
        except ServiceError as e:
            raise CommandError(e.message) from None
        finally:
            for h in handles:
                h.close()
        self.stdout.write(f"run {run.id} queued: {run.name}")
        if not wait:
            return
        deadline = time.monotonic() + timeout
        while run.status in (Status.QUEUED, Status.PARSING):
            if time.monotonic() > deadline:
                raise CommandError(f"run {run.id} still {run.status} after {timeout:.0f}s (is a worker running?)")
            time.sleep(0.5)
            run = Run.objects.get(id=run.id)
        if run.status == Status.FAILED:
            raise CommandError(f"run {run.id} failed: {run.error}")
        self.stdout.write(
            f"run {run.id} ready: {run.throughput_tok_s} tok/s, verify {run.verify_ms} ms/cyc, steps {run.steps}"
        )

    def _user(self, username):
        User = get_user_model()
        if username:
            try:
                return User.objects.get(username=username)
            except User.DoesNotExist:
                raise CommandError(f"no user named {username!r}") from None
        owner = User.objects.filter(is_superuser=True).order_by("id").first() or User.objects.order_by("id").first()
        if owner is None:
            raise CommandError("no user yet: create one (manage.py createsuperuser) or run `make run`")
        return owner

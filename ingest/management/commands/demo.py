from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from ingest import registration
from runs.models import Membership, Project, Run

SAMPLES = Path(settings.BASE_DIR) / "samples"
# (file, run name, tags): the story in DESIGN.md, told with this project's own recordings.
DEMO_RUNS = [
    ("spec_baseline_nospec.log", "baseline, no speculation", ["demo", "baseline"]),
    ("spec_eagle3_tuned_2step.log", "EAGLE3 2-step, PCIe NCCL tuning", ["demo", "eagle3"]),
    ("sweep/sweep_baseline_nospec.log", "sweep: no speculation", ["demo", "sweep", "baseline"]),
    *[(f"sweep/sweep_{nccl}_{k}step.log", f"sweep: {k}-step, {nccl} NCCL", ["demo", "sweep"])
      for nccl in ("default", "tuned") for k in range(1, 6)],
    ("sweep/sweep_dropped_2step.log", "sweep: 2-step, tuning dropped by the launcher", ["demo", "sweep"]),
    ("nccl-tests_all_reduce_default.log", "nccl-tests all_reduce, 2×H200", ["demo", "nccl-tests"]),
]
# The demo's ready sweep: every run above tagged "sweep".
SWEEP_URL = "/sweep/?project=demo&tag=sweep"


class Command(BaseCommand):
    help = "Create the dev-only user demo/demo and load the demo runs (once). Refused when DEBUG is off."

    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError("the demo user has a known password: refused with DEBUG off")
        User = get_user_model()
        user, created = User.objects.get_or_create(username="demo", defaults={"is_staff": True})
        if created:
            user.set_password("demo")
            user.save()
        project, _ = Project.objects.get_or_create(name="demo")
        Membership.objects.get_or_create(project=project, user=user, defaults={"role": Membership.Role.ADMIN})
        loaded = 0
        for rel, name, tags in DEMO_RUNS:
            if Run.objects.filter(project=project, name=name).exists():
                continue
            path = SAMPLES / rel
            with open(path, "rb") as f:
                registration.register_upload(
                    user, [registration.IncomingFile(path.name, f, path.stat().st_size)],
                    name=name, project="demo", tags=tags,
                )
            loaded += 1
        self.stdout.write(f"demo: {loaded} run(s) queued, {len(DEMO_RUNS) - loaded} already there")
        self.stdout.write(f"sweep: {SWEEP_URL}")
        self.stdout.write("login: demo / demo  (dev only)")

from django.core.management.base import BaseCommand, CommandError

from runs import services
from runs.models import Run


class Command(BaseCommand):
    help = ("Store the charted series (Run.series) of runs stored before they were kept, so their pages "
            "stop computing them from every row on each request. Idempotent: runs that have them are skipped.")

    def add_arguments(self, parser):
        parser.add_argument("--run", type=int, metavar="ID", help="only this run")

    def handle(self, *args, run, **options):
        ids = services.runs_without_series()
        if run is not None:
            if not Run.objects.filter(id=run).exists():
                raise CommandError(f"no run {run}")
            ids = [i for i in ids if i == run]
        filled = 0
        for run_id in ids:
            if services.backfill_series(run_id):
                filled += 1
                self.stdout.write(f"run {run_id}: series stored")
        self.stderr.write(f"filled {filled} run(s); {len(ids) - filled} skipped (busy or filled meanwhile)"
                          if ids else "filled 0 run(s): every run has its series")

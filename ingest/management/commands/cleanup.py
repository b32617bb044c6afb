from django.conf import settings
from django.core.management.base import BaseCommand

from ingest import storage


class Command(BaseCommand):
    help = ("Remove temporary files a killed web server or worker left behind (Django's *.upload.* "
            "spool files, logs/*.part) once untouched for --older-than seconds. The reconciler does the same.")

    def add_arguments(self, parser):
        parser.add_argument("--older-than", type=int, default=settings.ORPHAN_AGE_SECONDS, metavar="SECONDS",
                            help=f"age in seconds (default RUNLENS_ORPHAN_AGE_SECONDS={settings.ORPHAN_AGE_SECONDS})")
        parser.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")

    def handle(self, *args, older_than, dry_run, **options):
        paths = storage.orphans(older_than) if dry_run else storage.remove_orphans(older_than)
        for path in paths:
            self.stdout.write(str(path))
        verb = "would remove" if dry_run else "removed"
        self.stderr.write(f"{verb} {len(paths)} orphaned file(s) older than {older_than} s")

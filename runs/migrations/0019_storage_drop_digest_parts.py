# The stored columns have one format: the summary reads a file's column blocks (runs/columns.py),
# so the per-file digests, the same values written a second time, go. Nothing is converted: every
# value a digest held is in its file's blocks. Reversed, the table comes back empty, and the code
# of that time rebuilt a missing digest from the blocks on the run's next refresh.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0018_roles_edits_failed_files'),
    ]

    operations = [
        migrations.DeleteModel(name='DigestPart'),
    ]

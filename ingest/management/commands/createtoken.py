from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from webapp.auth import create_token


class Command(BaseCommand):
    help = "Create an API token for USERNAME; the token is printed alone on the last line, once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label for the token, e.g. 'github-actions'")

    def handle(self, *args, username, name, **options):
        User = get_user_model()
        try:
            user = User.objects.get(username=username)
        except User.DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None
        token = create_token(user, name)
        self.stderr.write(f"API token for {username} (shown once; send it as 'Authorization: Bearer <token>'):")
        self.stdout.write(token)

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from webapp.auth import create_token


class Command(BaseCommand):
    help = "Create an API token for USERNAME; the token is printed alone on the last line, once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label for the token, e.g. 'github-actions'")
        parser.add_argument("--create-user", action="store_true",
                            help="create USERNAME first if it does not exist (a CI bot: no password, "
                                 "so it cannot log in to the pages; add it to a project as editor)")

    def handle(self, *args, username, name, create_user, **options):
        User = get_user_model()
        try:
            user = User.objects.get(username=username)
        except User.DoesNotExist:
            if not create_user:
                raise CommandError(f"no user named {username!r} (add --create-user to make it)") from None
            user = User.objects.create_user(username=username)  # unusable password: tokens only
            self.stderr.write(f"created user {username} (no password: API tokens only)")
        token = create_token(user, name)
        self.stderr.write(f"API token for {username} (shown once; send it as 'Authorization: Bearer <token>'):")
        self.stdout.write(token)

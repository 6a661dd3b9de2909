"""A new installation says how to make its first admin: the README, the admin's login page and `make run`."""

import re

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db

COMMAND = "manage.py createsuperuser"


def admin_hint_code() -> str:
    """The Python that `make run` hands to `manage.py shell -c` (the Makefile's ADMIN_HINT)."""
    makefile = (settings.BASE_DIR / "Makefile").read_text()
    run_recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert '-c "$$ADMIN_HINT"' in run_recipe
    body = re.search(r"^define ADMIN_HINT\n(.*?)^endef$", makefile, re.S | re.M).group(1)
    return body.replace("$(BIN)", ".venv/bin")


def test_the_readme_says_how_to_create_the_first_admin():
    assert COMMAND in (settings.BASE_DIR / "README.md").read_text()


def test_the_admin_login_page_says_how_to_create_the_first_admin(client):
    html = client.get("/admin/login/").content.decode()
    assert 'id="first-admin"' in html and COMMAND in html
    assert 'name="password"' in html  # the login form is still there


def test_make_run_prints_the_hint_only_while_there_is_no_superuser(capsys, django_user_model):
    code = admin_hint_code()
    exec(code, {})
    assert COMMAND in capsys.readouterr().out
    django_user_model.objects.create_superuser("root", "root@example.org", "root-pass-123")
    exec(code, {})
    assert capsys.readouterr().out == ""

"""Cross-cutting test settings: a fast password hasher so persona fixtures cost milliseconds."""

import pytest


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

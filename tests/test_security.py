"""Security posture: deploy checks, headers, a CSP without inline script, and no secret in any page, file or log."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from .portal_pages import STAFF_PAGE_URLS

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION_PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.core.management import call_command
call_command("check", deploy=True, fail_level="WARNING")
print(json.dumps({k: getattr(settings, k) for k in (
    "DEBUG", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY", "SECURE_CONTENT_TYPE_NOSNIFF",
    "SECURE_REFERRER_POLICY", "X_FRAME_OPTIONS", "API_REQUIRE_KEY")}))
"""
INLINE_SCRIPT = re.compile(
    r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/(?:json|ld\+json)\")[^>]*>(.*?)</script>", re.S
)
INLINE_HANDLER = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.I)


def script_src(csp: str) -> str:
    return re.search(r"script-src ([^;]+)", csp).group(1)


@pytest.mark.slow  # a manage.py subprocess
def test_deploy_check_is_clean_and_hardens_everything_under_production_settings():
    dropped = ("CELERY_", "DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    environment.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DEBUG="0",
        SECRET_KEY="a-long-random-production-secret-for-the-deploy-check-" + "z" * 30,
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
    )
    result = subprocess.run(
        [sys.executable, "-c", PRODUCTION_PROBE], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "System check identified no issues" in result.stdout + result.stderr
    production = json.loads(result.stdout.strip().splitlines()[-1])
    assert production["DEBUG"] is False and production["API_REQUIRE_KEY"] is True
    assert production["SECURE_SSL_REDIRECT"] and production["SECURE_HSTS_SECONDS"] >= 31536000
    assert production["SECURE_HSTS_INCLUDE_SUBDOMAINS"] and production["SECURE_HSTS_PRELOAD"]
    assert production["SESSION_COOKIE_SECURE"] and production["CSRF_COOKIE_SECURE"]
    assert production["SESSION_COOKIE_HTTPONLY"] and production["SECURE_CONTENT_TYPE_NOSNIFF"]
    assert production["SECURE_REFERRER_POLICY"] == "same-origin" and production["X_FRAME_OPTIONS"] == "DENY"


@pytest.mark.django_db
def test_production_responses_carry_hsts_and_redirect_plain_http(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    plain = client.get("/findings/")
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    secure = client.get("/", secure=True)
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "includeSubDomains" in secure["Strict-Transport-Security"]


@pytest.mark.django_db
def test_every_page_has_the_security_headers_and_no_inline_script(client, seeded_pages):
    for url in seeded_pages:
        response = client.get(url)
        assert response.status_code == 200, url
        csp = response["Content-Security-Policy"]
        assert "'unsafe-inline'" not in script_src(csp) and "'unsafe-eval'" not in script_src(csp), url
        assert "object-src 'none'" in csp and "frame-ancestors 'none'" in csp, url
        assert response["X-Content-Type-Options"] == "nosniff", url
        assert response["Referrer-Policy"] == "same-origin", url
        assert response["X-Frame-Options"] == "DENY", url
        html = response.content.decode()
        inline = [code for code in INLINE_SCRIPT.findall(html) if code.strip()]
        assert inline == [], (url, inline[:1])
        assert not INLINE_HANDLER.search(html), (url, INLINE_HANDLER.search(html).group(0))
        assert "javascript:" not in html.lower(), url


@pytest.mark.django_db
def test_demo_page_is_cross_origin_isolated_and_keeps_its_csp(client):
    response = client.get("/demo/")
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response["Cross-Origin-Embedder-Policy"] == "require-corp"
    csp = response["Content-Security-Policy"]
    sources = script_src(csp).split()
    assert "'self'" in sources and "'unsafe-inline'" not in sources and "'unsafe-eval'" not in sources
    # Only the demo widens the policy (WebAssembly compilation); other pages keep the strict one.
    assert "'wasm-unsafe-eval'" in sources
    other = client.get("/lab/")
    assert "'wasm-unsafe-eval'" not in script_src(other["Content-Security-Policy"])
    assert "Cross-Origin-Embedder-Policy" not in other


@pytest.mark.django_db
def test_json_api_and_static_files_are_not_sniffable(client):
    for url in ("/api/findings/", "/api/health", "/static/css/portal.css"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response["X-Content-Type-Options"] == "nosniff", url


@pytest.mark.django_db
def test_no_secret_or_api_key_appears_in_pages_static_files_or_logs(seeded_pages, staff_user, caplog):
    from inference.models import ApiKey

    _, raw_key = ApiKey.issue("leak check")
    secrets_ = [settings.SECRET_KEY, raw_key]
    staff = Client()
    staff.force_login(staff_user)
    anonymous = Client()
    seen = 0
    with caplog.at_level("DEBUG"):
        for url in seeded_pages:
            for who in (anonymous, staff):
                body = who.get(url).content.decode()
                seen += 1
                assert not any(secret in body for secret in secrets_), url
        for url in [*STAFF_PAGE_URLS, "/admin/inference/apikey/", "/api/schema/", "/api/health", "/no-such-page/"]:
            body = staff.get(url).content.decode()
            assert not any(secret in body for secret in secrets_), url
        keyed = {"HTTP_AUTHORIZATION": f"Bearer {raw_key}"}
        assert anonymous.get("/v1/models", **keyed).status_code == 200
        completion = anonymous.post(
            "/v1/completions",
            {"model": "eqlm-demo", "prompt": "In the", "max_tokens": 2},
            content_type="application/json",
            **keyed,
        )
        assert completion.status_code == 200
        assert raw_key not in completion.content.decode()
        anonymous.get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {raw_key}-wrong")
    assert seen >= 2 * 15
    assert caplog.records, "the requests above should have logged something to search"
    for secret in secrets_:
        assert secret not in caplog.text
    # Static files: everything the portal serves from static/ (vendor bundles included) and the templates.
    scanned = 0
    for folder in [*settings.STATICFILES_DIRS, ROOT / "templates"]:
        for path in Path(folder).rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                scanned += 1
                assert not any(secret.encode() in data for secret in secrets_), path
    assert scanned > 20

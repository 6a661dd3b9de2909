"""Visitors get the portal's own 404 and 500 pages, with DEBUG on as in `make run`; `make dev` keeps Django's."""

import pytest
from django.test import Client
from django.urls import path

from site_root import urls as portal_urls

pytestmark = pytest.mark.django_db


def broken_view(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("broken/", broken_view), *portal_urls.urlpatterns]
handler404 = portal_urls.handler404
handler500 = portal_urls.handler500


@pytest.fixture
def visitor():
    return Client(raise_request_exception=False)


@pytest.mark.parametrize("debug", [True, False])
def test_a_missing_page_shows_the_portals_own_404_without_the_url_list(visitor, settings, debug):
    settings.DEBUG = debug
    response = visitor.get("/no-such-page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "There is nothing at <code>/no-such-page/</code>" in html
    assert 'aria-label="Main"' in html  # the portal's frame, with its navigation
    assert "URLconf" not in html and "Using the URLconf" not in html


@pytest.mark.parametrize("debug", [True, False])
def test_a_missing_object_shows_the_portals_own_404(visitor, settings, debug):
    settings.DEBUG = debug
    response = visitor.get("/findings/F999/")
    assert response.status_code == 404
    assert "Back to the home page" in response.content.decode()
    assert "Raised by" not in response.content.decode()


@pytest.mark.parametrize("debug", [True, False])
def test_an_error_in_a_view_shows_the_portals_own_500_without_a_traceback(visitor, settings, debug):
    settings.DEBUG = debug
    settings.ROOT_URLCONF = __name__
    response = visitor.get("/broken/")
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong" in html
    assert "Traceback" not in html and "a bug in a view" not in html


def test_make_dev_shows_djangos_technical_404(visitor, settings):
    settings.DEBUG = True
    settings.DEBUG_TECHNICAL_PAGES = True
    response = visitor.get("/no-such-page/")
    assert response.status_code == 404
    assert "URLconf" in response.content.decode()


def test_a_missing_api_endpoint_keeps_the_apis_error_shape_with_debug_on(visitor, settings):
    settings.DEBUG = True
    response = visitor.get("/api/no-such-endpoint")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_page_without_its_slash_still_redirects_with_debug_on(visitor, settings):
    settings.DEBUG = True
    response = visitor.get("/glossary")
    assert response.status_code == 301 and response["Location"] == "/glossary/"

"""Views for the findings record and the home page."""

from django.shortcuts import render


def home(request):
    return render(request, "home.html", {"section": "home"})

"""Tests of the eqlm library: plain pytest, no database, no Django."""

"""Regression tests, one module per fixed issue: tests/issues/test_<n>_<slug>.py."""

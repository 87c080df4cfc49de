"""pytest fixtures built on the test-support servers (filled in by tests/support owners)."""

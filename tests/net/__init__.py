"""Tests for the networking core (a2a_sync._net)."""

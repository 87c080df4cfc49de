"""Tests for the a2a-sync command (a2a_sync.cli)."""

"""Tests for the A2A protocol package (a2a_sync.a2a)."""

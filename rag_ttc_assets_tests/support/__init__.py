"""Test doubles shared by the suites: local servers that stand in for remote providers."""

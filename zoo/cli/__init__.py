"""The `zoo` command line."""

"""raw_format."""

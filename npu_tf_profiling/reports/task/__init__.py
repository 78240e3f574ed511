"""task."""

"""Terminal rendering of the CLI (Rich): tables, trees, progress bars, JSON output; presentation
only, data stays in base units."""

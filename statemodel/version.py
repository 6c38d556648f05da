"""Engine version: bumped whenever the same events could produce different decisions or state."""

ENGINE_VERSION = "0.2.0"

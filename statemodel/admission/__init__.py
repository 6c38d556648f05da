"""The admission cycle: heads, flavor assignment, the wake-up index (Kueue pkg/scheduler)."""

"""Scenario tests for Kueue's fair sharing: Dominant Resource Share and ``weightedShare``, the DRS
tournament ordering a cycle's heads, its combination with admission fair sharing (KEP-4136), and
fair-sharing preemption.

Expected values are worked by hand from reference/kueue.md §3.3-3.4, §4.4 and §5 (Kueue
``fair_sharing.go``, ``fair_sharing_iterator.go``, ``preemption/fairsharing``); the situations are
transcribed from Kueue's own tests (``fair_sharing_test.go``, ``scheduler_fs_test.go``,
``preemption_fair_test.go``) as events.  Units: cpu in millicores; "cpu 3" means 3000.
"""

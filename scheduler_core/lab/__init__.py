"""The lab: students write a scheduling policy and `servescope lab check` grades it against vLLM's.

The student writes one method, `schedule(view)`, which says which requests run this step and
with how many tokens (and, from exercise 4, which running requests to preempt). It runs inside the
same engine as vLLM's policy (`policy.py`), on each exercise's workloads (`exercises.py`), in
lockstep with the reference (`grader.py`); the first step where the two batches part is put into
words from the reference's decision trace (`explain.py`).
"""

"""Print vLLM's own prefix-cache stats (`PrefixCacheStats`, summed over every step's
`SchedulerStats`) for recorded traces, synchronous and async, as JSON lines: the figures
tests/oracle/test_prefix_stats_oracle.py checks servescope's hit-rate counts against.

    /tmp/vllm-venv/bin/python tools/vllm_recorder/prefix_stats.py TRACE.json.gz [...]
"""

from __future__ import annotations

import json
import sys

from record import record_run


def main(argv: list[str]) -> int:
    for trace in argv:
        for async_scheduling in (False, True):
            _, stats = record_run(trace, async_scheduling)
            print(json.dumps({"trace": trace, "async_scheduling": async_scheduling, **stats}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

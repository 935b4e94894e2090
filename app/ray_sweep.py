"""A sweep's points as Ray tasks: `servescope sweep --ray [ADDRESS]`.

Ray is an optional extra (`servescope[ray]`), so this lives beside the command rather than in
`scheduler_core`, which is the standard library only. Each task is `scheduler_core`'s own
`run_point_of`: where a point runs changes nothing in its row.
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduler_core.errors import ConfigError
from scheduler_core.sweep import run_point_of
from scheduler_core.sweep.grid import SweepPoint


def run_ray(points: list[SweepPoint], name: str, address: str | None = None, **init_kwargs) -> Iterator[dict]:
    """Each point a Ray task on the cluster at `address` (None: a local Ray); needs `servescope[ray]`."""
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray", "Ray is not installed: pip install 'servescope[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address, **init_kwargs)
    remote_point = ray.remote(run_point_of)
    pending = [remote_point.remote((point, name)) for point in points]
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            yield ray.get(ready[0])
    finally:
        for ref in pending:
            ray.cancel(ref)

"""A fleet's report as text: the fleet's metrics, one row per replica, the router and the link."""

from __future__ import annotations

from .report import _fmt, format_report


def format_fleet_report(report: dict, title: str = "") -> str:
    lines = [format_report(report, title), "", "  per replica:"]
    decisions = {**report["router"]["decisions"], **report.get("decode_router", {}).get("decisions", {})}
    lines.append(f"  {'replica':<12} {'routed':>7} {'requests':>9} {'TTFT p99 ms':>12} {'TPOT p99 ms':>12} "
                 f"{'hit rate %':>11} {'KV mean %':>10} {'preempt':>8}")
    for row in report["replicas"]:
        lines.append(
            f"  {row['replica']:<12} {decisions.get(row['replica'], 0):>7} {row['num_requests']:>9} "
            f"{_fmt(row['ttft_s']['p99'], 1e3):>12} {_fmt(row['tpot_s']['p99'], 1e3):>12} "
            f"{_fmt(row['prefix_cache_hit_rate'], 100):>11} {_fmt(row['kv_usage_mean'], 100):>10} {row['preemptions']:>8}"
        )
    router = f"  router {report['router']['policy']}"
    if "decode_router" in report:
        router += f", decode router {report['decode_router']['policy']}"
    lines.append(router)
    if "lockstep" in report:
        lockstep = report["lockstep"]
        lines.append(f"  DP ranks in lockstep: {lockstep['num_steps']:,} steps, {lockstep['num_dummy_batches']:,} dummy batches")
    if "kv_transfer" in report:
        t = report["kv_transfer"]
        lines.append(f"  KV transfer over {t['link']}: {t['num_transfers']:,} transfers, {t['num_blocks']:,} blocks, "
                     f"{t['bytes'] / 1e9:,.2f} GB, {t['seconds_mean'] * 1e3:.3f} ms each on average")
    return "\n".join(lines)

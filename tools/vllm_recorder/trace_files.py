"""Where the recorder's traces live and how they are written: gzip with mtime 0, so the same
trace or log always gives the same bytes (the fixtures are compared byte for byte)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"


def write_gzip(path: Path | str, text: str) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(text.encode())


def write_trace(out: Path, name: str, trace: dict) -> None:
    """A trace as `out/trace_NAME.json.gz`, the name the manifest (fixtures.json) gives it."""
    path = out / f"trace_{name}.json.gz"
    write_gzip(path, json.dumps(trace))
    print(f"wrote {path.relative_to(FIXTURES.parent.parent)}")

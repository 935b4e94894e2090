"""Where requests come from: synthetic arrival processes and length distributions, shared prefixes,
and importers of CSV and JSONL traces."""

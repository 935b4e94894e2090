"""Where the tests find what they read, wherever in tests/ they sit."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# Recordings of vLLM's own schedulers (tools/vllm_recorder/ made them).
FIXTURES = TESTS / "fixtures"

"""`servescope lab new DIR`: the starter a student edits, and the README of the exercises."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .exercises import EXERCISES
from .student import CLASS_NAME

SCHEDULER_FILE = "my_scheduler.py"

SCHEDULER_TEXT = f'''"""My scheduler for the servescope lab. Check it with:

    servescope lab check {SCHEDULER_FILE} --exercise 1

The one method to write is `schedule(view)`: which requests run this step, and with how many
tokens. Everything else (KV block allocation, sampling, finishing, freeing) is the engine's, as in
vLLM, where the model runner does not care who chose the batch.
"""


class {CLASS_NAME}:
    def schedule(self, view):
        """Decide one step.

        `view` is read-only (a snapshot; changing it changes nothing):
          view.running          running requests, oldest admission first (the last is the newest)
          view.waiting          waiting requests, head of the queue first
          view.num_free_blocks  free KV blocks;  view.block_size: tokens per block
          view.token_budget     most tokens in one step (None: no budget, as in static batching)
          view.max_num_seqs     most requests running at once
          view.chunked_prefill  whether a prompt may be split over several steps
          view.blocks_needed(request, num_tokens)  more blocks `request` needs for `num_tokens` more
        Each request has request_id, num_prompt_tokens, num_output_tokens, max_tokens,
        num_computed_tokens, num_remaining_tokens (1 for a decode), num_blocks, priority and arrival_index.

        Return a dict {{request_id: tokens}}: running requests first, then the waiting requests you
        admit, in the order you admit them. From exercise 4 on, return (that dict, [request ids to
        preempt]) when you preempt.
        """
        return {{}}
'''


def readme_text() -> str:
    lines = ["# The servescope lab", "",
             f"Write `{CLASS_NAME}.schedule()` in `{SCHEDULER_FILE}`, one exercise at a time, and check it against",
             "vLLM's scheduler:", "",
             f"    servescope lab check {SCHEDULER_FILE} --exercise N", "",
             "The check runs your scheduler and the reference in lockstep, in servescope's engine, on the",
             "exercise's workloads, and reports either `passed` or the first step where the two batches part,",
             "with the reason vLLM had for its choice and the two batches side by side. It exits 0 when your",
             "scheduler passed, 1 when it diverged (or returned a batch the engine cannot run), 2 when the file",
             "is broken (an exception, a step over its time budget). `--json` prints the result for an autograder.",
             "Checking runs your file's Python code, as any autograder does.", "",
             "Prefix caching is off in every exercise.", ""]
    for ex in EXERCISES:
        config = ex.engine_config()
        settings = [f"max_num_seqs={config.max_num_seqs}", f"num_gpu_blocks={config.num_gpu_blocks}",
                    f"block_size={config.block_size}"]
        if ex.has_token_budget:
            settings.append(f"max_num_batched_tokens={config.max_num_batched_tokens}")
            settings.append(f"chunked prefill {'on' if config.enable_chunked_prefill else 'off'}")
        lines += [f"## {ex.number}. {ex.title}", "", ex.rules, "",
                  f"Graded against {ex.reference_name} with {', '.join(settings)}, on:", ""]
        lines += [f"- {w.describe()}" for w in ex.workloads] + [""]
    return "\n".join(lines)


def write_starter(directory: str) -> list[Path]:
    """Write the starter into `directory` (made if missing); refuses one that is not empty."""
    root = Path(directory)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ConfigError("DIR", f"{directory} is not an empty directory; the starter never overwrites files")
    root.mkdir(parents=True, exist_ok=True)
    files = [(root / SCHEDULER_FILE, SCHEDULER_TEXT), (root / "README.md", readme_text())]
    for path, text in files:
        path.write_text(text)
    return [path for path, _ in files]

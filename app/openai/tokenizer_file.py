"""A model's own tokenizer, from a `tokenizer.json` the operator names on the command line (read
locally with Hugging Face's `tokenizers` package, never downloaded): prompts then count the tokens
the real server would. Chats are laid out by the stand-in's template (the model's chat template is
Jinja, which a stand-in does not run); output text stays the stand-in's."""

from __future__ import annotations

from array import array
from pathlib import Path

from scheduler_core.errors import ConfigError
from scheduler_core.files import MAX_TRACE_BYTES
from scheduler_core.workload.standin_tokenizer import StandInTokenizer


class FileTokenizer(StandInTokenizer):
    def __init__(self, path: Path):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ConfigError("tokenizer", "reading a tokenizer file needs the `tokenizers` package "
                                           "(pip install 'servescope[tokenizer]')") from None
        if not path.is_file() or path.stat().st_size > MAX_TRACE_BYTES:
            raise ConfigError("tokenizer", f"{path} is not a readable tokenizer.json within {MAX_TRACE_BYTES >> 20} MiB")
        try:
            self.tokenizer = Tokenizer.from_file(str(path))
        except Exception as e:  # the library's own error for a file it cannot read
            raise ConfigError("tokenizer", f"{path}: not a tokenizer file ({str(e)[:200]})") from None
        self.name = path.name

    def encode(self, text: str) -> array:
        return array("i", self.tokenizer.encode(text, add_special_tokens=True).ids)

"""A deterministic stand-in for a model's tokenizer, for a served session (`serve --openai`).

A served engine needs token ids for a client's text: their count drives the simulation, and their
values drive prefix caching (two prompts that start alike share blocks). Without the model's own
tokenizer (a file the operator may name, read only by the app), text is cut into pieces the way a
byte-pair tokenizer roughly does: words, runs of digits and single punctuation marks, a word of
more than four characters cut every four (English averages about four characters a token). Each
piece's id is its CRC-32 folded into the vocabulary, so the same text always gives the same ids,
and text that starts alike gives ids that start alike.

Output text is made of stand-in tokens too: a generated token is a word of `OUTPUT_WORDS`, chosen
by the request's index and the token's position, so a response is the same on every run.
"""

from __future__ import annotations

import re
import zlib
from array import array
from collections.abc import Sequence

from .workload import VOCAB_SIZE

# The ids below it are left to special tokens, as real vocabularies begin with theirs.
FIRST_TEXT_ID = 256
PIECE_CHARS = 4
PIECES = re.compile(r"[^\W\d_]+|\d+|\S", re.UNICODE)
OUTPUT_WORDS = ("the", "engine", "schedules", "a", "batch", "of", "tokens", "and", "pages", "its", "KV", "cache",
                "into", "blocks", "while", "requests", "wait", "in", "line", "for", "their", "turn", "to", "decode")


class StandInTokenizer:
    """Text to token ids and back, with no vocabulary file: see the module's docstring."""

    name = "servescope-stand-in"

    def encode(self, text: str) -> array:
        ids = array("i")
        for match in PIECES.finditer(text):
            word = match.group()
            for start in range(0, len(word), PIECE_CHARS):
                piece = word[start:start + PIECE_CHARS].encode("utf-8", "surrogatepass")
                ids.append(FIRST_TEXT_ID + zlib.crc32(piece) % (VOCAB_SIZE - FIRST_TEXT_ID))
        return ids

    def apply_chat_template(self, messages: Sequence[tuple[str, str]]) -> str:
        """A conversation as one prompt, the way a chat template lays it out: each message under
        its role, then the assistant's turn, opened for the model to complete."""
        turns = [f"<|{role}|>\n{content}\n" for role, content in messages]
        return "".join(turns) + "<|assistant|>\n"

    def output_token(self, request_index: int, position: int) -> int:
        """The id of a served request's `position`-th generated token."""
        return FIRST_TEXT_ID + (request_index * 7919 + position * 104_729) % len(OUTPUT_WORDS)

    def decode_token(self, token_id: int) -> str:
        """A generated token's text: a space and one of OUTPUT_WORDS."""
        return " " + OUTPUT_WORDS[(token_id - FIRST_TEXT_ID) % len(OUTPUT_WORDS)]

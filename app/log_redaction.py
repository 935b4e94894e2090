"""Nothing token-shaped reaches a log. uvicorn writes its access line (the request target,
query included) before the app sees the request, so a `?token=...` someone pasted into a link
would be logged however the app answers; this filter, on every handler `servescope serve` logs
through, rewrites such values first. The app itself never puts a token in a URL or a message."""

from __future__ import annotations

import copy
import logging
import re

# `token=...`, `control_token=...`, `x-control-token: ...`: the value, whatever it looks like.
NAMED_TOKEN = re.compile(r"((?:^|[?&;\s\"'{,])[\w-]*token[\"']?\s*[=:]\s*[\"']?)[^&\s\"',}]+", re.IGNORECASE)
# A control token is secrets.token_urlsafe(18): 24 characters of [A-Za-z0-9_-]. A run of 20 or
# more with both cases is token-shaped; session ids (hex), lesson and file names (lower case) are not.
TOKEN_SHAPED = re.compile(r"(?<![\w-])(?=[\w-]*[a-z])(?=[\w-]*[A-Z])[\w-]{20,}(?![\w-])")
REDACTED = "[redacted]"


def redact(text: str) -> str:
    return TOKEN_SHAPED.sub(REDACTED, NAMED_TOKEN.sub(lambda m: m.group(1) + REDACTED, text))


class RedactTokens(logging.Filter):
    """Rewrites a record's message, arguments and traceback with tokens redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            # Its formatter reads the arguments one by one (client, method, target, ...).
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        else:
            # Written out first: an argument may be an object (a websocket frame) whose text holds one.
            record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


def log_config() -> dict:
    """uvicorn's own logging configuration, with RedactTokens on each of its handlers."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"redact_tokens": {"()": RedactTokens}}
    for handler in config["handlers"].values():
        handler["filters"] = ["redact_tokens"]
    return config

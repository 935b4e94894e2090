"""Reading the files a command-line user names (scenarios, traces) within a budget.

Only regular files are read, and their type is checked on an open that cannot block, so a FIFO
or /dev/zero is refused before a byte is read; sizes and line lengths are bounded (a gzip file's
by the bytes it expands to, read at most that far), and bytes that are not UTF-8 are reported with
their file and line. JSON is parsed within a budget too (`parse_json`): its arrays, objects and
values are counted before any is built, so a small file cannot expand into gigabytes of lists.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import ConfigError

MAX_SCENARIO_BYTES = 1 << 20
MAX_TRACE_BYTES = 256 << 20
MAX_LINE_BYTES = 1 << 20
# What one JSON document may hold: a recorded trace of 1,000,000 requests has a few arrays and
# objects per request; 2^24 values are ~600 MB built. Counted on the text (C speed), so a bracket
# or comma inside a string counts too: the bound errs on the side of refusing.
MAX_JSON_CONTAINERS = 1 << 22
MAX_JSON_VALUES = 1 << 24
# Python refuses to read an integer of more digits than this (sys.get_int_max_str_digits()).
MAX_INT_DIGITS = 4300
LONG_INTEGER = re.compile(f"[0-9]{{{MAX_INT_DIGITS + 1},}}")


def open_regular(path: str | Path, max_bytes: int) -> BinaryIO:
    """The file opened for binary reading, if it is a regular file of at most `max_bytes`."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ConfigError(str(path), "no such file") from None
    except OSError as e:
        raise ConfigError(str(path), f"cannot open it ({e.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ConfigError(str(path), "not a regular file")
    if info.st_size > max_bytes:
        os.close(fd)
        raise ConfigError(str(path), f"larger than the {max_bytes >> 20} MiB a file may have")
    return os.fdopen(fd, "rb")


def line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def read_text(path: str | Path, max_bytes: int) -> str:
    """A whole small file as text (gzip-compressed if it ends in .gz); a UTF-8 BOM is dropped."""
    with open_regular(path, max_bytes) as raw:
        data = raw.read(max_bytes + 1)
    if str(path).endswith(".gz"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
                data = unzipped.read(max_bytes + 1)
        except (OSError, EOFError) as e:
            raise ConfigError(str(path), f"not a readable gzip file ({e})") from None
    if len(data) > max_bytes:
        raise ConfigError(str(path), f"larger than the {max_bytes >> 20} MiB a file may have")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}:{line_of(data, e.start)}", "not UTF-8 text") from None


def text_lines(path: str | Path, max_bytes: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a regular file; a UTF-8 BOM at the start is dropped."""
    with open_regular(path, max_bytes) as raw:
        number = 0
        while line := raw.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(line) > MAX_LINE_BYTES:
                raise ConfigError(f"{path}:{number}", f"a line longer than {MAX_LINE_BYTES >> 10} KiB")
            try:
                text = line.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise ConfigError(f"{path}:{number}", "not UTF-8 text") from None
            yield number, text



def parse_json(text: str, where: str, line: int | None = None) -> object:
    """JSON text as Python values, or a ConfigError naming `where` (and the line) when it is not JSON,
    is nested too deeply, holds more than the budget of arrays, objects or values, or an integer
    too long for Python to read. `line`: the text is that line of a file (a text of one line
    otherwise names no line)."""
    def at(text_line: int | None) -> str:
        """`where`, with the line at fault when there is one to name."""
        if line is not None:
            return f"{where}:{line}"
        if text_line is None or "\n" not in text.rstrip("\n"):
            return where
        return f"{where}:{text_line}"

    containers = text.count("[") + text.count("{")
    if containers > MAX_JSON_CONTAINERS:
        raise ConfigError(at(None), f"more than {MAX_JSON_CONTAINERS:,} JSON arrays and objects ({containers:,})")
    values = text.count(",") + 1
    if values > MAX_JSON_VALUES:
        raise ConfigError(at(None), f"more than {MAX_JSON_VALUES:,} JSON values ({values:,})")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(at(e.lineno), f"not valid JSON ({e.msg})") from None
    except RecursionError:
        raise ConfigError(at(None), "JSON nested too deeply") from None
    except ValueError:  # the only other: an integer past Python's int-from-text limit
        match = LONG_INTEGER.search(text)
        raise ConfigError(at(text.count("\n", 0, match.start()) + 1 if match else None),
                          f"an integer of more than {MAX_INT_DIGITS:,} digits") from None

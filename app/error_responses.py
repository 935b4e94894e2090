"""422s that can always be written: a validation error names the field at fault and says what is
wrong, but never echoes the value sent, which may be what made the request bad (NaN, a lone
surrogate, a megabyte of text) and which JSON or UTF-8 cannot carry."""

from __future__ import annotations

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


def printable(text: str) -> str:
    """`text` as UTF-8 can carry it: a lone surrogate becomes its escape, `\\ud800`."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error_entry(error: dict) -> dict:
    """One pydantic error as the API answers it: where, what kind, and the message; no input."""
    loc = [printable(part) if isinstance(part, str) else part for part in error.get("loc", ())]
    return {"type": error.get("type", ""), "loc": loc, "msg": printable(str(error.get("msg", "")))}


async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    return JSONResponse(status_code=422, content={"detail": [error_entry(e) for e in error.errors()]})

"""Errors as vLLM's OpenAI server writes them: `{"error": {"message", "type", "param", "code"}}`,
the status repeated as `code` (vLLM's `ErrorResponse`)."""

from __future__ import annotations

from http import HTTPStatus

from fastapi.responses import JSONResponse

from ..error_responses import printable

# vLLM's names for the statuses it answers with (`create_error_response`).
ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 429: "TooManyRequestsError", 503: "ServiceUnavailableError"}


class OpenAIError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, err_type: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.err_type = err_type or ERROR_TYPES.get(status, HTTPStatus(status).phrase)
        self.headers = headers

    def body(self) -> dict:
        return {"error": {"message": printable(self.message), "type": self.err_type, "param": self.param,
                          "code": self.status}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)

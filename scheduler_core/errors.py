"""The one error type the core raises for bad input, so callers can report the field at fault."""


class ConfigError(ValueError):
    """An invalid configuration, request or trace value.

    `field` names the offending setting (dotted for nested ones, e.g. `requests[3].max_tokens`)
    so a CLI, an API or a form can point at it; `reason` says what is wrong with it.
    """

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

"""Errors obspack reports to users. Each message says what is wrong and what to do next."""


class ObspackError(Exception):
    """Base class: the CLI prints the message on one line and exits non-zero, without a traceback."""

    exit_code = 1


class ConfigError(ObspackError):
    """The config file is unreadable or invalid. Carries every problem found, one per line."""

    exit_code = 2

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class RenderError(ObspackError):
    """The pack could not be rendered or written; previous output is left as it was."""

"""The one exception the stack manager raises for anything a user can act on."""


class StackError(RuntimeError):
    """A service could not be installed, started, or stopped; the message says what to do."""

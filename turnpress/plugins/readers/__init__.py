"""Built-in transcript readers, one module a format (DESIGN §10).

- :mod:`~turnpress.plugins.readers.openai_chat`: OpenAI chat-completions
  message lists and request bodies (``openai-chat``);
- :mod:`~turnpress.plugins.readers.mini_swe_agent`: mini-swe-agent
  ``*.traj.json`` trajectories (``mini-swe-agent``);
- :mod:`~turnpress.plugins.readers.anthropic_messages`: Anthropic Messages runs
  (``anthropic-messages``).

Each registers through ``register_trace_readers`` like a third-party reader; the
mapping they share is in :mod:`~turnpress.plugins.readers._transcript`.
"""

from __future__ import annotations

from collections.abc import Callable

from turnpress.core.hookspecs import hookimpl
from turnpress.plugins.readers import anthropic_messages, mini_swe_agent, openai_chat

READERS = (mini_swe_agent, anthropic_messages, openai_chat)


@hookimpl
def register_trace_readers(register: Callable[..., None]) -> None:
    """Register the three built-in formats (while built-in plugins are found as the
    top-level modules of ``turnpress.plugins``)."""
    for module in READERS:
        module.register_trace_readers(register)

"""Built-in transcript readers, one module a format (DESIGN §10).

- :mod:`~turnpress.plugins.readers.openai_chat`: OpenAI chat-completions
  message lists and request bodies (``openai-chat``);
- :mod:`~turnpress.plugins.readers.mini_swe_agent`: mini-swe-agent
  ``*.traj.json`` trajectories (``mini-swe-agent``);
- :mod:`~turnpress.plugins.readers.anthropic_messages`: Anthropic Messages runs
  (``anthropic-messages``);
- :mod:`~turnpress.plugins.readers.openai_responses`: OpenAI Responses API inputs
  (``openai-responses``).

Each module is a built-in plugin (listed in ``BUILTIN_PLUGINS``) and registers
through ``register_trace_readers`` like a third-party reader; the
mapping they share is in :mod:`~turnpress.plugins.readers._messages_to_trace`.
"""


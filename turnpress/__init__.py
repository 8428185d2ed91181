"""turnpress: decide what a multi-turn, code-writing LLM agent sees of its own past.

*Compress the code, preserve the learnings.* Turns go in, the messages of the next
LLM call come out; strategies, namespace sections, type labels, tokenizers and
templates are pluggy plugins. Importing this package loads no third-party plugin:
they are found through the ``turnpress`` entry-point group on first use.
"""

from turnpress.compress import Compressor, compress
from turnpress.core.clojure import to_clojure
from turnpress.core.compression import (
    Compression,
    NamespaceView,
    RenderContext,
    Strategy,
    StrategyNotApplicable,
    get_strategy,
    normalize,
    render,
)
from turnpress.core.hookspecs import hookimpl
from turnpress.core.labels import type_label
from turnpress.core.model import (
    Failure,
    Fn,
    Keyword,
    Memory,
    Message,
    Tool,
    ToolCall,
    Turn,
    Usage,
)
from turnpress.core.registry import PluginError, PluginWarning
from turnpress.core.request import RequestError, request_for
from turnpress.core.templates import TemplateProblem
from turnpress.core.trace import Trace, load_trace, save_trace
from turnpress.core.trace_inputs import load_traces
from turnpress.core.version import __version__

__all__ = [
    "Compression",
    "Compressor",
    "Failure",
    "Fn",
    "Keyword",
    "Memory",
    "Message",
    "NamespaceView",
    "PluginError",
    "PluginWarning",
    "RenderContext",
    "RequestError",
    "Strategy",
    "StrategyNotApplicable",
    "TemplateProblem",
    "Tool",
    "ToolCall",
    "Trace",
    "Turn",
    "Usage",
    "__version__",
    "compress",
    "get_strategy",
    "hookimpl",
    "load_trace",
    "load_traces",
    "normalize",
    "render",
    "request_for",
    "save_trace",
    "to_clojure",
    "type_label",
]

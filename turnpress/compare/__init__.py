"""Compare history strategies on traces: tokens, prompt-cache reuse, cost and retention.

Everything ``turnpress compare`` does is callable from Python::

    from turnpress.compare import compare_traces

    result = compare_traces(["runs.jsonl"], strategies=["single-user-coalesced",
                            "rolling-window:window=3"], cache="anthropic")
    for s in result.strategies:
        print(s.label, s.input_tokens, s.cached_share, s.cost_usd, s.cost_ratio, s.retention,
              s.needed_fact_recall)
    print("recommended:", result.recommended.label, "as run:", result.as_run)
    print(result.dumps())                    # the --json document
    write_html_report(result, "report.html")
"""

from turnpress.compare.engine import compare_traces, resolve_strategies, strategy_label
from turnpress.compare.failures import CompareError
from turnpress.compare.html import html_report, write_html_report
from turnpress.compare.results import (
    AsRun,
    ComparisonResult,
    DroppedFact,
    StrategyResult,
    TraceInfo,
    TracePrompts,
    TurnStats,
)
from turnpress.compare.sources import count_traces
from turnpress.compare.table import comparison_table, print_comparison

__all__ = [
    "AsRun",
    "CompareError",
    "ComparisonResult",
    "DroppedFact",
    "StrategyResult",
    "TraceInfo",
    "TracePrompts",
    "TurnStats",
    "compare_traces",
    "comparison_table",
    "count_traces",
    "html_report",
    "print_comparison",
    "resolve_strategies",
    "strategy_label",
    "write_html_report",
]

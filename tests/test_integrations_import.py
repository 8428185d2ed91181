"""``import turnpress`` imports no agent framework (issue 19 item 1): each integration is
behind its own extra and is loaded only by importing its module."""

from __future__ import annotations

import json
import subprocess
import sys

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "pydantic_ai", "agents",
              "smolagents", "openai", "anthropic")


def loaded_after(code: str) -> set[str]:
    """The framework packages present in ``sys.modules`` after running ``code`` in a
    fresh interpreter."""
    probe = (f"{code}\nimport sys, json\n"
             f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return set(json.loads(out.splitlines()[-1])) & set(FRAMEWORKS)


def test_import_turnpress_imports_no_framework():
    assert loaded_after("import turnpress, turnpress.compress, turnpress.cli") == set()


def test_the_integration_package_and_its_helpers_import_no_framework():
    assert loaded_after("import turnpress.integrations, turnpress.integrations._common") == set()

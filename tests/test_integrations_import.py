"""``import turnpress`` imports no agent framework (issue 19 item 1): each integration is
behind its own extra and is loaded only by importing its module."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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


@pytest.mark.parametrize(("module", "package", "extra"), [
    ("smolagents", "smolagents", "smolagents"),
    ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
    ("openai_agents", "agents", "openai-agents"),
    ("langchain", "langchain", "langchain")])
def test_a_missing_framework_is_one_line_naming_the_extra(module, package, extra):
    """Without its framework, an integration says which extra to install (LangChain:
    the list functions need langchain-core only; the middleware names the extra)."""
    use = ("m.TurnpressMiddleware" if module == "langchain" else "m")
    code = (f"import sys; sys.modules[{package!r}] = None\n"
            f"try:\n    import turnpress.integrations.{module} as m; {use}\n"
            f"except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out.endswith(f"pip install 'turnpress[{extra}]'"), out
    assert "\n" not in out

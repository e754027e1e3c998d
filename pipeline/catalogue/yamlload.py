"""Safe YAML loading through libyaml when the wheel has it.

Front matter of thousands of records is parsed on a cold catalogue; PyYAML's pure-Python
``SafeLoader`` is several times slower than the C ``CSafeLoader``, and both only build plain
data (no arbitrary objects), so the fast one is used whenever it exists.
"""
from __future__ import annotations

from typing import Any

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """Parse one YAML document into plain Python data."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader

"""The app's numeric settings, each an environment variable ($ANATOMY_...; docs/limits.md lists them)."""
from __future__ import annotations

import os
from typing import Callable, TypeVar

N = TypeVar("N", int, float)


def number(name: str, default: N, minimum: N, kind: Callable[[str], N] = int) -> N:
    """$`name` read as `kind`, at least `minimum`; `default` when unset or unreadable."""
    try:
        return max(minimum, kind(os.environ.get(name) or default))
    except ValueError:
        return default

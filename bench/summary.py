"""The one table of docs/speed.md: each goal, and what a run measured for it,
from :data:`Results` as the parts fill it (a cell none filled: "not measured").
"""

from __future__ import annotations

from dataclasses import dataclass

from .parsers import chosen
from .timing import Spread, markdown

Results = dict[tuple[str, str], Spread | float]


@dataclass(frozen=True)
class Row:
    """One measure: its key in :data:`Results`, its wording, and its goal if any."""

    key: str
    measure: str
    limit: float | None = None
    at_most: bool = True
    #: The pure parser's goal (where no compiler built the compiled one).
    pure_limit: float | None = None

    def verdict(self, value: float, limit: float | None = None) -> str:
        if limit is None:
            return ""
        value = round(value, 3)  # as printed: a reader checks the figure shown
        met = value <= limit if self.at_most else value >= limit
        return "met" if met else "not met"


ROWS = (
    Row("micro plain", "micro, plain: parser / floor", 1.20),
    Row("micro mixed", "micro, mixed: parser / floor", 1.20),
    Row("micro encoded", "micro, encoded: parser / floor", 1.20),
    Row("micro malformed", "micro, malformed: parser / naive", 0.30),
    Row("micro mixed naive", "micro, mixed: parser / naive", pure_limit=1.5),
    Row("starlette plain", "in process, Starlette, plain: guarded / bare", 1.08, pure_limit=1.30),
    Row("starlette encoded", "in process, Starlette, encoded: guarded / bare", 1.08, True, 1.30),
    Row("flask plain", "in process, Flask, plain: guarded / bare", 1.03, pure_limit=1.08),
    Row("flask encoded", "in process, Flask, encoded: guarded / bare", 1.03, pure_limit=1.08),
    Row("uvicorn plain", "end to end, uvicorn, plain: guarded / bare req/s", 0.97, False),
    Row("uvicorn encoded", "end to end, uvicorn, encoded: guarded / bare req/s", 0.97, False),
    Row("audit typical", "`urlguard audit --json`, typical log: lines/s"),
    Row("audit distinct", "`urlguard audit --json`, all lines distinct: lines/s"),
)
COLUMNS = ("compiled", "compiled Ir", "reference", "reference Ir")
HEADERS = ("measure", "goal", "compiled: time", "compiled: Ir", "pure: time", "pure: Ir")
LEGEND = (
    "Time: median of the per-round ratios (interquartile range); end to end and "
    "audit: median over runs (min–max). Ir: the same ratio in instructions "
    "(callgrind), one run. End to end runs the parser a guard uses by default. Each "
    "verdict is on its parser's time; the pure parser's goal is for installs without "
    "a compiler."
)


def _cell(value: Spread | float | None) -> str:
    if isinstance(value, Spread):
        return value.text()
    return "not measured" if value is None else f"{value:.3f}"


def table(results: Results) -> str:
    """The Markdown table of every row, measured or not, and its legend."""
    rows = []
    for row in ROWS:
        cells = [_cell(results.get((row.key, column))) for column in COLUMNS]
        # Not counted in instructions: end to end and audit; end to end runs one guard.
        if row.key.startswith(("uvicorn", "audit")):
            cells[1] = cells[3] = ""
        if row.key.startswith("uvicorn"):
            cells[2 if chosen() == "compiled" else 0] = ""
        verdicts, goals = [], []
        for column, limit in (("compiled", row.limit), ("reference", row.pure_limit)):
            value = results.get((row.key, column))
            verdicts.append(row.verdict(value.median, limit) if isinstance(value, Spread) else "")
            goals.append("" if limit is None else f"{'≤' if row.at_most else '≥'} {limit:.2f}")
        rows.append([row.measure, goals[0], *cells[:2], goals[1], *cells[2:], *verdicts])
    headers = [*HEADERS[:4], "pure goal", *HEADERS[4:], "verdict", "pure verdict"]
    return markdown(headers, rows) + "\n\n" + LEGEND

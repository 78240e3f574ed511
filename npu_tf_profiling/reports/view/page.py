"""One self-contained HTML document: plotly.js inlined once, then the sections' text and charts.

Plotly (the Python package) is an optional dependency (``npu_tf_profiling[view]``):
it is imported here only, when a page is built, and a missing one is a
``MissingDependencyError`` saying how to install it. The page loads nothing
from the network: plotly.js is copied into it (``get_plotlyjs``), and no chart
asks for fonts, maps or MathJax.

Text that comes from the data (paths, op names, notes) is escaped for HTML,
also inside chart labels, where plotly.js would read tags such as ``<b>``: so
an op named ``</script>`` can neither break the page nor run.

The page counts its charts as plotly.js finishes each; when the last is drawn
it sets ``data-rendered-ms`` on ``<html>`` (milliseconds since navigation
start): the browser test and ``benchmarks/view_open.py`` read how long the
page took to open from there.
"""
from __future__ import annotations

import html
import itertools
from dataclasses import dataclass, field
from typing import Any

from npu_tf_profiling.reports.errors import MissingDependencyError

INSTALL_HINT = "pip install 'npu_tf_profiling[view]' (or: pip install plotly)"
RENDERED_ATTRIBUTE = "data-rendered-ms"
PLOT_CONFIG = {"displaylogo": False, "responsive": True}

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; margin-top: 1.5em; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; font-size: .9em; } td, th { border: 1px solid #ddd; padding: .2em .5em; text-align: right; }
th { background: #f0f0f0; } td.text { text-align: left; }
.note { color: #7a4b00; background: #fff6e0; padding: .4em .6em; border-left: 3px solid #e0a000; }
.chart { margin: .5em 0; }
"""


def plotly_modules() -> tuple[Any, Any]:
    """(plotly.io, plotly.offline.get_plotlyjs), or ``MissingDependencyError`` with the install line."""
    try:
        import plotly.io as pio
        from plotly.offline import get_plotlyjs
    except ImportError as exc:
        raise MissingDependencyError(f"npu-tf-prof view draws its charts with plotly, which is not installed ({exc}); "
                                     f"{INSTALL_HINT}") from None
    return pio, get_plotlyjs


def text(value: object) -> str:
    """``value`` as HTML text (also what a chart label gets: plotly.js reads a few tags in labels)."""
    return html.escape(str(value), quote=True)


@dataclass
class Page:
    """The document being built: blocks of HTML in order, charts among them."""

    title: str
    blocks: list[str] = field(default_factory=list)
    charts: int = 0
    _ids: Any = field(default_factory=lambda: itertools.count(1), repr=False)

    def heading(self, level: int, value: object) -> None:
        self.blocks.append(f"<h{level}>{text(value)}</h{level}>")

    def paragraph(self, value: object, css: str = "") -> None:
        cls = f' class="{css}"' if css else ""
        self.blocks.append(f"<p{cls}>{text(value)}</p>")

    def preformatted(self, value: str) -> None:
        self.blocks.append(f"<pre>{text(value)}</pre>")

    def table(self, header: list[str], rows: list[list[object]], text_columns: frozenset[int] = frozenset()) -> None:
        head = "".join(f"<th>{text(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f'<td{" class=text" if j in text_columns else ""}>{text(v)}</td>' for j, v in enumerate(row)) + "</tr>"
            for row in rows
        )
        self.blocks.append(f"<table><tr>{head}</tr>{body}</table>")

    def chart(self, figure: dict[str, Any], height: int = 420) -> None:
        """A plotly figure (a dict: ``data``, ``layout``), drawn when the page opens."""
        pio, _ = plotly_modules()
        figure = {"data": figure["data"], "layout": {"height": height, "margin": {"t": 40, "b": 50}, **figure.get("layout", {})}}
        snippet = pio.to_html(
            figure, include_plotlyjs=False, full_html=False, validate=False, div_id=f"chart-{next(self._ids)}",
            default_height=f"{height}px", config=PLOT_CONFIG, post_script="window.npuTfProfView.drawn();",
        )
        self.blocks.append(f'<div class="chart">{snippet}</div>')
        self.charts += 1

    def to_html(self) -> str:
        _, get_plotlyjs = plotly_modules()
        counter = (
            "<script>window.npuTfProfView={expected:%d,done:0,drawn:function(){if(++this.done===this.expected)"
            "{document.documentElement.setAttribute('%s',String(Math.round(performance.now())));}}};</script>"
            % (self.charts, RENDERED_ATTRIBUTE)
        )
        return "\n".join([
            "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            f"<title>{text(self.title)}</title>", f"<style>{_STYLE}</style>",
            f'<script type="text/javascript">{get_plotlyjs()}</script>', counter, "</head>", "<body>",
            f"<h1>{text(self.title)}</h1>", *self.blocks,
            "<script>if(window.npuTfProfView.expected===0){window.npuTfProfView.expected=1;window.npuTfProfView.drawn();}</script>",
            "</body>", "</html>", "",
        ])

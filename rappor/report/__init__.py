"""Reporting: a decode explained to people, as plots and a self-contained HTML page.

In the order a report uses them (modules private, names listed here): ``_explain``
(plain-language notes: detection rule, floor ties, outlook), ``_plots`` (matplotlib
figures), ``_html`` (:func:`render_report`, :func:`write_report`: the page of
``rappor simulate --report``) and ``_association`` (the page of ``rappor simulate-assoc``).
matplotlib is imported only when a figure is drawn; ``import rappor`` does not import this package.
"""

from __future__ import annotations

from ._association import render_association_report, write_association_report
from ._html import render_report, write_report
from ._plots import plot_epsilon, plot_estimates, plot_fit_residuals, plot_residuals

__all__ = [
    "plot_epsilon",
    "plot_estimates",
    "plot_fit_residuals",
    "plot_residuals",
    "render_association_report",
    "render_report",
    "write_association_report",
    "write_report",
]

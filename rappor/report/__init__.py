"""Reporting: a decode explained to people, as plots and a self-contained HTML page.

In the order a report uses them (modules private, names listed here): ``_explain``
(plain-language notes: :func:`detection_rule`, :func:`floor_tie`, :func:`outlook_text`,
:func:`detectable_share_note`), ``_plots`` (matplotlib figures), ``_html`` (:func:`render_report`, :func:`write_report`: the page of
``rappor simulate --report``) and ``_association`` (the page of ``rappor simulate-assoc``).
matplotlib is imported only when a figure is drawn; ``import rappor`` does not import this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._association import render_association_report, write_association_report
    from ._explain import detectable_share_note, detection_rule, floor_tie, outlook_text
    from ._html import render_report, write_report
    from ._plots import plot_epsilon, plot_estimates, plot_fit_residuals, plot_residuals
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = [
    "detectable_share_note",
    "detection_rule",
    "floor_tie",
    "outlook_text",
    "plot_epsilon",
    "plot_estimates",
    "plot_fit_residuals",
    "plot_residuals",
    "render_association_report",
    "render_report",
    "write_association_report",
    "write_report",
]

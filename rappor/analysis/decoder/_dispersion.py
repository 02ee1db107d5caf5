"""What a residual dispersion well above 1 points to (private): repeats, missing strings or wrong parameters.

The decoder's model gives every (cohort, bit) count the variance of independent reports;
its Pearson dispersion (:attr:`DecodeDiagnostics.dispersion`, the chi-square over its
degrees of freedom) is about 1 when the model fits, and the standard errors are widened by
its square root when it is larger.  Three causes make it larger, and each leaves its own
mark on the counts (measured on the scenario classes of ``benchmarks/_classes.py``):

* **repeated reports**: clients that report the same value again and again under one
  memoized PRR (RAPPOR as deployed) add the PRR's variance once per client, not once per
  report.  A client's ``R`` reports have variance ``R v + R^2 (q - p)^2 s`` with
  ``s = (f/2)(1 - f/2)`` the variance of a PRR bit and ``v`` that of a report given its
  PRR, against ``R pi (1 - pi) = R (v + (q - p)^2 s)`` in the model, so the dispersion is
  about ``1 + (R - 1) kappa`` with ``kappa = (q - p)^2 s / (pi (1 - pi))`` (Erlingsson,
  Pihur and Korolova 2014, Sec. 3: the PRR is what repeated reports cannot average away).
  The residuals stay symmetric and the bits per report match the parameters (measured:
  10 reports per client, dispersion 1.47-1.49 for a predicted 1.43; 30: 2.54-2.55 for 2.38);
* **strings missing from the candidate list**: their reports set bits no candidate
  explains, in a few cells of each cohort, so the residuals have a positive skew (measured:
  +0.27 to +0.39, against +-0.08 with every string listed) and the unexplained mass is
  above 0 (many missing strings spread their ones over many bits, and then the unexplained
  mass is the mark: 99 of the demo's 100 strings missing, 0.71 of the mass, skewness -0.02);
* **parameters that do not match the counts** (``p``, ``q``, ``f`` or ``h``): the
  debiased counts of a cohort add up to the bits a report sets -- about
  ``k (1 - (1 - 1/k)^h)`` -- only under the right parameters (measured: f = 0.5 counts
  decoded with f = 0.25 give 3.97 bits per report for 1.94, with f = 0.75 -4.1; h = 1
  counts decoded with h = 2 give 1.00 for 1.94).

:func:`explain_dispersion` computes the three marks and says, in words, which cause they
point to.  Only a dispersion the chi-square test rejects is explained (p-value below
:data:`ALARM_PVALUE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from ...params import Params

__all__ = ["ALARM_PVALUE", "DispersionCheck", "explain_dispersion", "residual_skewness"]

#: A dispersion is explained when the residual chi-square's p-value is below this.
ALARM_PVALUE = 1e-3
#: A mark counts when it is this many standard errors from what its cause's absence gives.
MARK_Z = 4.0


@dataclass(frozen=True, slots=True, kw_only=True)
class DispersionCheck:
    """The marks of the three causes of a dispersion above 1, and what they point to.

    Attributes
    ----------
    dispersion : float
        The fit's Pearson dispersion.
    skewness, skewness_se : float
        Skewness of the whitened residuals and its standard error ``sqrt(6 / n)``.
    bits_per_report, bits_per_report_se : float
        Debiased ones per report (all cohorts) and its standard error.
    expected_bits : float
        ``k (1 - (1 - 1/k)^h)``: the distinct bits a report's Bloom filter sets on average.
    reports_per_client : float
        The reports per client under one PRR that would give this dispersion alone
        (``1 + (dispersion - 1) / kappa``); nan when ``f = 0`` (no PRR variance).
    reports_per_client_low : float
        The same from the dispersion less ``z sqrt(2 / n)``, its sampling standard deviation
        under the model (``n`` residuals; a chi-square over its degrees of freedom) times the
        normal quantile ``z`` of :data:`ALARM_PVALUE`: the fewest reports a client that chance
        leaves compatible with the counts.  Where ``kappa`` is small (``q - p`` small against
        the bits' spread) a dispersion just past the alarm reads as several reports a client,
        and only this end says whether the counts need them (measured: 6 of 100 strings listed, one report a
        client, k=16 m=64 p=0.5 q=0.75 f=0.5: dispersion 1.157, about 4.3 reports a client,
        this end 1.4).
    cause : str
        ``"parameters"``, ``"missing strings"`` or ``"repeated reports"``.
    text : str
        The explanation in words, for stderr.
    """

    dispersion: float
    skewness: float
    skewness_se: float
    bits_per_report: float
    bits_per_report_se: float
    expected_bits: float
    reports_per_client: float
    reports_per_client_low: float
    cause: str
    text: str

    def as_dict(self) -> dict[str, float | str]:
        """The fields as a JSON-ready mapping (the decode summary's ``residual.explanation``)."""
        return {"dispersion": self.dispersion, "skewness": self.skewness, "skewness_se": self.skewness_se,
                "bits_per_report": self.bits_per_report, "bits_per_report_se": self.bits_per_report_se,
                "expected_bits": self.expected_bits, "reports_per_client": self.reports_per_client,
                "reports_per_client_low": self.reports_per_client_low, "cause": self.cause, "text": self.text}


def residual_skewness(residuals: npt.ArrayLike) -> tuple[float, float]:
    """Skewness of the finite whitened residuals and its standard error ``sqrt(6 / n)`` (nan below 3 of them).

    Strings missing from the candidate list skew the residuals to the positive side (module
    docstring); under a fitting model the skewness is about ``N(0, 6 / n)`` (the large-sample
    law of the sample skewness of normal data; D'Agostino 1970, Biometrika 57(3)).
    """
    r = np.asarray(residuals, dtype=np.float64)
    r = r[np.isfinite(r)]
    if r.size < 3:
        return math.nan, math.nan
    centred = r - r.mean()
    spread = math.sqrt(float((centred**2).mean()))
    skew = float(((centred / spread) ** 3).mean()) if spread > 0 else 0.0  # equal residuals: no asymmetry
    return skew, math.sqrt(6.0 / r.size)


def bits_per_report(counts: npt.NDArray[np.int64], params: Params) -> tuple[float, float]:
    """Debiased ones per report over every cohort with reports, and its standard error.

    ``t_cb = (c_cb / N_c - p01) / (p11 - p01)`` (google/rappor ``decode.R``,
    ``EstimateBloomCounts``) summed over bits, averaged over reports; the variance of each
    count is binomial at its observed rate.
    """
    n = counts[:, 0].astype(np.float64)
    used = n > 0
    if not used.any():
        return math.nan, math.nan
    n = n[used]
    rate = counts[used, 1:] / n[:, None]
    gap = params.p11 - params.p01
    per_cohort = ((rate - params.p01) / gap).sum(axis=1)
    var = (rate * (1.0 - rate) / n[:, None]).sum(axis=1) / gap**2
    total = float(n.sum())
    return float((per_cohort * n).sum() / total), math.sqrt(float((var * n**2).sum())) / total


def explain_dispersion(counts: npt.NDArray[np.int64], params: Params, residuals: npt.ArrayLike | None,
                       dispersion: float, chi2_pvalue: float, unexplained_mass: float, *,
                       skewness: tuple[float, float] | None = None,
                       unexplained_std_error: float = math.nan) -> DispersionCheck | None:
    """The marks of a dispersion well above 1 and the cause they point to (module docstring); None when it fits.

    Parameters
    ----------
    counts : ndarray of shape (num_cohorts, num_bloombits + 1)
        The decoded counts (reports per cohort, then ones per bit).
    params : Params
        The parameters the counts were decoded with.
    residuals : array-like of shape (num_cohorts, num_bloombits) or None
        The fit's whitened residuals (nan for cohorts without reports).
    dispersion, chi2_pvalue, unexplained_mass : float
        From the decode's diagnostics.
    skewness : tuple of float, optional
        :func:`residual_skewness` of ``residuals`` when the decode computed it already
        (its diagnostics' ``residual_skewness`` and ``residual_skewness_se``).
    unexplained_std_error : float, optional
        The unexplained mass's standard error.  When given, an unexplained mass more than
        :data:`MARK_Z` of them above 0 is a mark of missing strings too, whatever the
        skewness: many missing strings spread their ones over many bits, and their residuals
        need not be skewed (the demo's 100 strings with one of them listed: 0.71 of the mass
        outside the list, skewness -0.02 +- 0.08).

    Returns
    -------
    DispersionCheck or None
        None unless the chi-square p-value is below :data:`ALARM_PVALUE` and the
        residuals are known.
    """
    if residuals is None or not (math.isfinite(chi2_pvalue) and chi2_pvalue < ALARM_PVALUE):
        return None
    skew, skew_se = residual_skewness(residuals) if skewness is None else skewness
    if not math.isfinite(skew):
        return None
    bits, bits_se = bits_per_report(counts, params)
    k, h = params.num_bloombits, params.num_hashes
    expected = k * -math.expm1(h * math.log1p(-1.0 / k)) if k > 1 else 1.0
    reports = _reports_per_client(counts, params, dispersion)
    spread = math.sqrt(2.0 / max(int(np.isfinite(np.asarray(residuals, dtype=np.float64)).sum()), 1))
    reports_low = _reports_per_client(counts, params, dispersion - NormalDist().inv_cdf(1.0 - ALARM_PVALUE) * spread)
    off = abs(bits - expected) / bits_se if bits_se > 0 else 0.0
    head = (f"the counts vary more than the model allows (residual dispersion {dispersion:.2f}, chi-square "
            f"p-value {chi2_pvalue:.1g}); standard errors and p-values are widened by sqrt({dispersion:.2f}). ")
    marks = (f"Here: {bits:.2f} +- {bits_se:.2f} bits per report for {expected:.2f} expected; residual skewness "
             f"{skew:+.2f} +- {skew_se:.2f}; unexplained mass {unexplained_mass:.3f}.")
    if math.isfinite(off) and off > MARK_Z:
        cause = "parameters"
        why = (f"The parameters do not match the counts: their debiased ones add up to {bits:.2f} bits per report "
               f"where h={h} hashes into k={k} bits set {expected:.2f} (check p, q, f and h against the collection's "
               "params.csv). ")
    elif skew > MARK_Z * skew_se or unexplained_mass > MARK_Z * unexplained_std_error:
        cause = "missing strings"
        why = ("Strings missing from the candidate list are the likely cause: their reports leave excess ones in "
               "bits that no candidate sets (residuals skewed to the positive side, unexplained mass above 0); add "
               "the strings (rappor discover finds candidates) to explain them. ")
        if not skew > MARK_Z * skew_se:
            why += (f"Here the unexplained mass ({unexplained_mass:.3f} +- {unexplained_std_error:.3f}) says so; the "
                    "residuals are not skewed, as when many missing strings spread their ones over many bits, so "
                    "clients that repeat their reports may add to it. ")
    else:
        cause = "repeated reports"
        many = (f" (about {reports:.{1 if reports < 10 else 0}f} reports per client would give it; at least "
                f"{reports_low:.1f} beyond what chance allows)") if math.isfinite(reports) and math.isfinite(reports_low) else ""
        why = (f"Repeated reports are the likely cause{many}: clients that report the same value several times "
               "under one memoized PRR add its noise once per client, so the counts spread evenly more than for "
               "independent reports (symmetric residuals, bits per report as expected); the widened standard "
               "errors allow for it. ")
    text = head + why + ("Other causes and their marks: repeated reports (symmetric residuals), missing strings "
                         "(positive skew, unexplained mass above 0), wrong parameters (bits per report off). " + marks)
    return DispersionCheck(dispersion=dispersion, skewness=skew, skewness_se=skew_se, bits_per_report=bits,
                           bits_per_report_se=bits_se, expected_bits=expected, reports_per_client=reports,
                           reports_per_client_low=reports_low, cause=cause, text=text)


def _reports_per_client(counts: npt.NDArray[np.int64], params: Params, dispersion: float) -> float:
    """``1 + (dispersion - 1) / kappa``, ``kappa = (q - p)^2 s / (pi (1 - pi))`` at the mean bit rate (module docstring)."""
    half_f = params.prob_f / 2.0
    n = float(counts[:, 0].sum())
    if n <= 0 or half_f <= 0:
        return math.nan
    rate = float(counts[:, 1:].sum()) / (n * params.num_bloombits)
    kappa = (params.prob_q - params.prob_p) ** 2 * half_f * (1.0 - half_f) / max(rate * (1.0 - rate), 1e-300)
    return 1.0 + max(dispersion - 1.0, 0.0) / kappa if kappa > 0 else math.nan

"""Privacy curves: epsilon vs lying probability, Renyi/zCDP bounds, and composition over T reports.

Prints tables always; saves three PNGs (privacy_*.png) if matplotlib is installed, into OUTDIR
(default: examples/output/ next to this script, which git ignores).  Nothing is written into the
current directory unless it is given as OUTDIR.

    python examples/privacy_curves.py [OUTDIR]
"""

import argparse
from pathlib import Path

import numpy as np

from rappor import Params
from rappor.privacy import epsilon_from_lying_probability
from rappor.privacy import loss, rdp, rho_zcdp

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("outdir", nargs="?", type=Path, default=Path(__file__).resolve().parent / "output",
                    help="directory for the PNGs [default: examples/output/]")
args = parser.parse_args()

params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)

lying = np.linspace(0.01, 0.49, 9)
print("lying probability -> epsilon")
for q in lying:
    print(f"  {q:.2f}  {epsilon_from_lying_probability(q):.4f}")

orders = np.geomspace(1.01, 200, 60)
prr, rep = rdp(params, orders, kind="permanent"), rdp(params, orders)
rho_p, rho_r = rho_zcdp(params), rho_zcdp(params, kind="report")
print(f"\nzCDP: PRR rho={rho_p:.4f} (classic eps_inf^2/2={params.epsilon_inf ** 2 / 2:.4f}); report rho={rho_r:.4f}")
print(" alpha   RDP(PRR)  rho*alpha  RDP(report)")
for a, x, y in list(zip(orders, prr, rep))[::10]:
    print(f" {a:6.2f}  {x:8.4f}  {rho_p * a:9.4f}  {y:10.4f}")

reports = [1, 2, 5, 10, 20, 50, 100, 200]
print("\nT reports of changing values, delta=1e-6: basic, advanced, zCDP, optimal RDP")
rows = [loss(params, reports=t) for t in reports]
for t, r in zip(reports, rows):
    print(f" T={t:4d}  {r.epsilon_basic:8.3f}  {r.epsilon_advanced:8.3f}  {r.epsilon_zcdp:8.3f}  {r.epsilon_rdp:8.3f}")

try:
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state
except ImportError:
    print("\nmatplotlib not installed: no figures")
else:
    args.outdir.mkdir(parents=True, exist_ok=True)
    names = ("privacy_epsilon_vs_lying.png", "privacy_zcdp.png", "privacy_composition.png")
    fig = Figure()
    ax = fig.add_subplot()
    ql = np.linspace(0.005, 0.5, 200)
    ax.plot(ql, [epsilon_from_lying_probability(x) for x in ql])
    ax.set(xlabel="lying probability q", ylabel="epsilon = ln((1-q)/q)", title="Binary randomized response")
    fig.savefig(args.outdir / names[0], dpi=120)
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot(orders, prr, label="RDP, permanent response")
    ax.plot(orders, rho_p * orders, "--", label=f"tight zCDP rho={rho_p:.2f}")
    ax.plot(orders, params.epsilon_inf ** 2 / 2 * orders, ":", label="classic eps^2/2 zCDP")
    ax.plot(orders, rep, label="RDP, one report")
    ax.axhline(params.epsilon_inf, color="grey", lw=0.5)
    ax.set(xscale="log", ylim=(0, 1.5 * params.epsilon_inf ** 2 / 2), xlabel="Renyi order alpha", ylabel="epsilon(alpha)",
           title="Renyi DP and zCDP bounds")  # ylim shows the classic bound (it starts at eps^2/2)
    ax.legend()
    fig.savefig(args.outdir / names[1], dpi=120)
    fig = Figure()
    ax = fig.add_subplot()
    for name in ("epsilon_basic", "epsilon_advanced", "epsilon_zcdp", "epsilon_rdp"):
        ax.plot(reports, [getattr(r, name) for r in rows], marker="o", label=name)
    ax.set(xscale="log", yscale="log", xlabel="reports T", ylabel="epsilon (delta=1e-6)", title="Composition")
    ax.legend()
    fig.savefig(args.outdir / names[2], dpi=120)
    print(f"\nsaved {', '.join(names)} in {args.outdir}")


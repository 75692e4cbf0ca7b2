"""Ornstein-Uhlenbeck mechanism versus the Gaussian mechanism (Section 5.1 of Balle et al. 2019).

Release a bounded query f(D) in R^d (||f(D)|| <= R, L2-sensitivity Delta) with the same
Renyi DP guarantee, (alpha, alpha * eps)-RDP for every alpha > 1, in three ways:

* GM : f(D) + N(0, sigma^2 I) with sigma^2 = Delta^2 / (2 eps);
* PGM: beta * (f(D) + N(0, sigma^2 I)), beta = R^2 / (R^2 + d sigma^2) (post-processed GM);
* OU : the Ornstein-Uhlenbeck diffusion at t = 1 with Theorem 8's (theta, rho).

The script prints a table (closed-form MSE at the worst case ||f|| = R and a Monte Carlo
estimate of the OU error with its standard error), then plots MSE against epsilon and,
for one (theta, rho) meeting Theorem 8's condition, the errors over time and the error against
the RDP epsilon Lambda(t) as the diffusion runs longer (OU versus Brownian motion = GM).

    python examples/ou_vs_gaussian.py                 # saves ou_vs_gaussian.png (chainamp installed,
                                                      # or PYTHONPATH=. from the repository root)
    python examples/ou_vs_gaussian.py --show          # also opens a window
"""

from __future__ import annotations

import argparse

import numpy as np

from chainamp.diffusion import (
    BrownianMotion,
    OrnsteinUhlenbeck,
    estimate_mse,
    matched_gaussian_mse,
    ou_condition,
    ou_mse,
    ou_parameters_for_epsilon,
    pgm_mse,
)


def privacy_sweep(epsilons, sens, R, d, n_samples, rng):
    """One row per epsilon: Theorem 8's parameters, closed-form errors and an OU Monte Carlo check."""
    f_worst = np.zeros(d)
    f_worst[0] = R  # ||f|| = R: the worst case of eq. (4)
    rows = []
    for eps in epsilons:
        p = ou_parameters_for_epsilon(eps, sens, R, d)
        sigma2 = sens**2 / (2 * eps)
        est = estimate_mse(OrnsteinUhlenbeck(p.theta, p.rho), f_worst, 1.0, n_samples, rng)
        rows.append({
            "eps": eps, "theta": p.theta, "rho": p.rho, "certified": p.certified_epsilon,
            "gm": p.gaussian_mse,
            # PGM at the matched variance: E_GM (1 + d sigma^2 / R^2)^{-1}
            "pgm": p.gaussian_mse / (1 + d * sigma2 / R**2),
            "ou": ou_mse(p.theta, p.rho, 1.0, d, R), "ou_mc": est.mean, "ou_se": est.standard_error,
            "ratio_bound": p.mse_ratio_bound,
            # sanity: the Brownian-motion form of the GM has the same RDP at order 2
            "gm_rdp2": BrownianMotion().rdp(2.0, sigma2 / 2, sens),
        })
    return rows


def print_table(rows, sens, R, d):
    print(f"d = {d}, sensitivity Delta = {sens}, radius R = {R}; every mechanism is (alpha, alpha*eps)-RDP")
    print(f"{'eps':>6} {'theta':>8} {'rho':>8} {'eps cert.':>10} {'E_GM':>10} {'E_PGM':>9} "
          f"{'E_OU (4)':>9} {'E_OU MC +- SE':>20} {'OU/GM':>7} {'bound':>7}")
    for r in rows:
        mc = f"{r['ou_mc']:.4f} +- {r['ou_se']:.4f}"
        print(f"{r['eps']:6.2f} {r['theta']:8.4f} {r['rho']:8.4f} {r['certified']:10.6f} {r['gm']:10.4f} "
              f"{r['pgm']:9.4f} {r['ou']:9.4f} {mc:>20} {r['ou'] / r['gm']:7.4f} {r['ratio_bound']:7.4f}")
    print("eps cert.: Corollary 7's Lambda(1) for the printed (theta, rho), rounded up (never above eps).")
    print("E_OU MC: mean of ||f - M_1(f)||^2 over the samples at ||f|| = R, with its standard error.")
    print("At ||f|| = R, E_OU(1) equals the PGM error: Theorem 8's bound OU/GM <= (1 + d Delta^2/(2 eps R^2))^-1"
          " is attained there.")


def time_sweep(theta, rho, sens, R, d, ts):
    ou, bm = OrnsteinUhlenbeck(theta, rho), BrownianMotion()
    e_ou = np.array([ou_mse(theta, rho, t, d, R) for t in ts])
    e_gm = np.array([matched_gaussian_mse(theta, rho, t, d) for t in ts])
    e_pgm = np.array([pgm_mse(theta, rho, t, d, R) for t in ts])
    lam_ou = np.array([ou.intrinsic_sensitivity(t, sens) for t in ts])
    lam_bm = np.array([bm.intrinsic_sensitivity(t, sens) for t in ts])
    return e_ou, e_gm, e_pgm, lam_ou, lam_bm


def plot(rows, sweep, ts, theta, rho, d, out, show):
    import matplotlib  # lazily: the library itself never needs it

    if not show:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eps = np.array([r["eps"] for r in rows])
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.8))
    ax1.loglog(eps, [r["gm"] for r in rows], "-", label="Gaussian mechanism")
    ax1.loglog(eps, [r["pgm"] for r in rows], "--", label="post-processed GM")
    ax1.loglog(eps, [r["ou"] for r in rows], "-", label="OU, eq. (4) at ||f|| = R")
    ax1.errorbar(eps, [r["ou_mc"] for r in rows], yerr=[3 * r["ou_se"] for r in rows], fmt="o", ms=3,
                 label="OU Monte Carlo (+-3 SE)")
    ax1.set_xlabel("eps (each mechanism is (alpha, alpha*eps)-RDP)")
    ax1.set_ylabel("mean squared error")
    ax1.set_title("Error at equal privacy (Theorem 8)")
    ax1.legend(fontsize=8)

    e_ou, e_gm, e_pgm, lam_ou, lam_bm = sweep
    ax2.loglog(ts, e_gm, label="E_GM (matched)")
    ax2.loglog(ts, e_pgm, "--", label="E_PGM")
    ax2.loglog(ts, e_ou, label="E_OU")
    ax2.set_xlabel("diffusion time t")
    ax2.set_title(f"Errors over time (theta={theta:g}, rho={rho:g})")
    ax2.legend(fontsize=8)

    # run each diffusion longer for more privacy: (Lambda(t), MSE(t)) traced over t
    ax3.loglog(lam_bm, 2 * d * ts, label="Brownian motion = GM (Example 5)")
    ax3.loglog(lam_ou, e_gm, ":", label="GM matched to OU's Lambda(t)")
    ax3.loglog(lam_ou, e_ou, label="OU at fixed (theta, rho) (Corollary 7, eq. (4))")
    ax3.set_xlabel("eps = Lambda(t) (RDP (alpha, alpha*eps))")
    ax3.set_ylabel("mean squared error")
    ax3.set_title("Privacy-error trade-off along each diffusion")
    ax3.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"saved {out}")
    if show:
        plt.show()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, default=10, help="dimension of the query (default 10)")
    ap.add_argument("--sensitivity", type=float, default=1.0, help="L2 sensitivity Delta (default 1)")
    ap.add_argument("--radius", type=float, default=1.0, help="bound R on ||f(D)|| (default 1)")
    ap.add_argument("--n-samples", type=int, default=20000, help="Monte Carlo samples per epsilon")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default="ou_vs_gaussian.png", help="where to save the figure")
    ap.add_argument("--show", action="store_true", help="open a window as well")
    ap.add_argument("--no-plot", action="store_true", help="print the table only")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    d, sens, R = args.d, args.sensitivity, args.radius
    epsilons = np.geomspace(0.05, 20.0, 12)
    rows = privacy_sweep(epsilons, sens, R, d, args.n_samples, rng)
    print_table(rows, sens, R, d)

    # Theorem 8, first part: a (theta, rho) at the edge of theta R^2 <= 4 d rho^2
    rho = 0.3
    theta = 4 * d * rho**2 / R**2
    assert ou_condition(theta, R, d, rho)
    ts = np.geomspace(1e-3, 3.0 / theta * 4, 200)
    sweep = time_sweep(theta, rho, sens, R, d, ts)
    worst = float(np.max(sweep[0] / sweep[1]))
    print(f"\ntheta={theta:g}, rho={rho:g}: theta R^2 <= 4 d rho^2 holds; max_t E_OU/E_GM = {worst:.4f} "
          f"(Theorem 8: <= 1); at t={ts[-1]:.3g} the ratio is {sweep[0][-1] / sweep[1][-1]:.2e}")
    if worst > 1.0:
        raise SystemExit("E_OU > E_GM under Theorem 8's condition: this should never happen")
    if not args.no_plot:
        plot(rows, sweep, ts, theta, rho, d, args.output, args.show)


if __name__ == "__main__":
    main()

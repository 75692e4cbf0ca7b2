"""Generate the synthetic logistic-regression data set used by the noisy-SGD example.

Run from anywhere: ``python datasets/noisy_sgd/generate.py``; it rewrites ``data.csv``
next to this file. The output is a deterministic function of SEED (numpy PCG64).
"""

from pathlib import Path

import numpy as np

SEED = 20191029
N, D = 400, 5


def generate(seed: int = SEED, n: int = N, d: int = D) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=d)
    w_true *= 4.0 / np.linalg.norm(w_true)
    x = rng.normal(size=(n, d)) / np.sqrt(d)
    x /= np.maximum(1.0, np.linalg.norm(x, axis=1))[:, None]  # every row has norm <= 1
    p = 1.0 / (1.0 + np.exp(-x @ w_true))
    y = np.where(rng.uniform(size=n) < p, 1, -1)
    return np.trunc(x * 1e6) / 1e6, y  # truncation toward 0 keeps every row norm <= 1


def main() -> None:
    x, y = generate()
    header = ",".join([f"x{j + 1}" for j in range(x.shape[1])] + ["label"])
    rows = [",".join([f"{v:.6f}" for v in row] + [str(int(lab))]) for row, lab in zip(x, y)]
    Path(__file__).with_name("data.csv").write_text(header + "\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""temme.py - the coefficient table of Temme's uniform expansion of the
incomplete gamma functions (DLMF 8.12.3-4), as ir/vmath_special.h uses it.

    Q(a, x) = erfc(eta sqrt(a/2)) / 2 + e^(-a eta^2 / 2) / sqrt(2 pi a) sum_k c_k(eta) a^-k
    eta^2 / 2 = lambda - 1 - ln lambda,  lambda = x / a,  eta of the sign of lambda - 1

Prints d[k][n], the Taylor coefficients of c_k(eta) (k < K, n < N), as a C
initializer. Exact rational arithmetic: lambda - 1 = mu(eta) by reverting
eta = mu sqrt(2 (mu - ln(1 + mu))) / mu; c_0 = 1/mu - 1/eta;
c_k = c_(k-1)'(eta) / eta + (-1)^k g_k / mu (DLMF 8.12.9), g_k the
coefficients of Stirling's series of Gamma*(a) (DLMF 5.11.3), from the
Bernoulli numbers. Cephes's table (igam.h, 25 x 25) agrees except in its last
entries.

    python3 scripts/temme.py [K N]     (default 12 17)
"""
import sys
from fractions import Fraction as Fr
from math import comb


def table(K, N):
    M = N + 2 * K + 4          # terms carried: each step of the recursion loses two

    def mul(a, b):
        c = [Fr(0)] * M
        for i, x in enumerate(a[:M]):
            if x:
                for j in range(M - i):
                    c[i + j] += x * b[j]
        return c

    def inv(a):                # 1/a, a[0] != 0
        r = [Fr(0)] * M
        r[0] = 1 / a[0]
        for n in range(1, M):
            r[n] = -sum(a[j] * r[n - j] for j in range(1, n + 1)) / a[0]
        return r

    def sqrt1(a):              # sqrt(a), a[0] == 1
        r = [Fr(1)] + [Fr(0)] * (M - 1)
        for n in range(1, M):
            r[n] = (a[n] - sum(r[j] * r[n - j] for j in range(1, n))) / 2
        return r

    # eta = mu g(mu), g^2 = 2 (mu - ln(1 + mu)) / mu^2 = sum_j 2 (-1)^j mu^j / (j + 2)
    gi = inv(sqrt1([Fr(2 * (-1) ** j, j + 2) for j in range(M)]))
    # Lagrange inversion: mu = sum_n b_n eta^n, b_n = [mu^(n-1)] g^-n / n
    mu, pw = [Fr(0)] * (M + 1), [Fr(1)] + [Fr(0)] * (M - 1)
    for n in range(1, M + 1):
        pw = mul(pw, gi)
        mu[n] = pw[n - 1] / n
    q = inv(mu[1:M + 1])       # eta / mu
    c = q[1:] + [Fr(0)]        # c_0 = (eta / mu - 1) / eta
    # ln Gamma*(a) = sum_j B_2j / (2j (2j - 1)) a^(1 - 2j); g_k: its exponential's
    B = [Fr(1)]
    for m in range(1, 2 * K + 4):
        B.append(-sum(comb(m + 1, j) * B[j] for j in range(m)) / (m + 1))
    lg = [Fr(0)] * M
    for j in range(1, K + 2):
        if 2 * j - 1 < M:
            lg[2 * j - 1] = B[2 * j] / (2 * j * (2 * j - 1))
    g, term = [Fr(1)] + [Fr(0)] * (M - 1), [Fr(1)] + [Fr(0)] * (M - 1)
    for i in range(1, K + 3):
        term = [t / i for t in mul(term, lg)]
        g = [x + t for x, t in zip(g, term)]
    rows = [c[:N]]
    for k in range(1, K):
        # the 1/eta terms of c_(k-1)'/eta and (-1)^k g_k / mu cancel
        assert c[1] + (-1) ** k * g[k] * q[0] == 0
        c = [(n + 2) * c[n + 2] + (-1) ** k * g[k] * q[n + 1] for n in range(M - 2)] + [Fr(0)] * 2
        rows.append(c[:N])
    return rows


def main():
    K, N = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) == 3 else (12, 17)
    print("static const double vm_temme_d[%d][%d] = {" % (K, N))
    for r in table(K, N):
        vals = ["%.17g" % float(x) for x in r]
        lines = [", ".join(vals[i:i + 3]) for i in range(0, N, 3)]
        print("    {" + ",\n     ".join(lines) + "},")
    print("};")


if __name__ == "__main__":
    main()

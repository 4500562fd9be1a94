#!/usr/bin/env python3
"""wino_points.py - which interpolation points for Winograd F(4x4, 3x3): the
Toom-Cook matrices (A^T, G, B^T) built from the points (plus infinity),
checked exact on integers, then an f32 simulation of one tile pipeline as
runtime/k_conv_direct.c runs it (U = G g G^T in f64 rounded once, input
and output transforms and the per-position sums over channels in f32 with
one rounding per multiply-add) against the exact conv, on P6-like data
(input N(0,1), weights N(0,1)/sqrt(9 C), C = 64 channels, 4 outputs
channels). Prints the max and rms abs error per point set; F(2x2) for scale.
Pure Python (no numpy): about 15 s per 60 tiles.

    python3 benchmarks/probes/wino_points.py [TILES]   (default 60)
"""
import random, struct, math
from fractions import Fraction as Fr
def f(x): return struct.unpack('f', struct.pack('f', x))[0]
def polymul(a, b):
    r = [Fr(0)]*(len(a)+len(b)-1)
    for i,x in enumerate(a):
        for j,y in enumerate(b): r[i+j] += x*y
    return r
def mats(pts, m, r=3):
    n = m + r - 1
    AT = [[p**i for p in pts] + [1 if i == m-1 else 0] for i in range(m)]
    G = []; BT = []
    for j,p in enumerate(pts):
        fj = Fr(1); poly = [Fr(1)]
        for l,q in enumerate(pts):
            if l != j: fj *= (p - q); poly = polymul(poly, [-q, Fr(1)])
        G.append([p**k / fj for k in range(r)])
        BT.append(poly + [Fr(0)])
    G.append([0]*(r-1) + [1])
    poly = [Fr(1)]
    for q in pts: poly = polymul(poly, [-q, Fr(1)])
    BT.append(poly)
    return [[Fr(x) for x in row] for row in AT], [[Fr(x) for x in row] for row in G], [[Fr(x) for x in row] for row in BT]
def check(AT, G, BT, m):
    # exactness: 1-D conv of random ints
    import random
    d = [Fr(random.randint(-5,5)) for _ in range(m+2)]; g = [Fr(random.randint(-5,5)) for _ in range(3)]
    Gg = [sum(G[i][k]*g[k] for k in range(3)) for i in range(m+2)]
    Bd = [sum(BT[i][k]*d[k] for k in range(m+2)) for i in range(m+2)]
    y = [sum(AT[i][k]*Gg[k]*Bd[k] for k in range(m+2)) for i in range(m)]
    ref = [sum(d[i+k]*g[k] for k in range(3)) for i in range(m)]
    assert y == ref, (y, ref)
def mm32(M, X):  # M (a x b) float consts, X list of b vectors -> f32 sums sequential with fma
    out = []
    for row in M:
        acc = 0.0
        for c, x in zip(row, X):
            if c != 0: acc = f(c * x + acc)
        out.append(acc)
    return out
def run(pts, m, C=64, tiles=60, seed=1):
    AT, G, BT = mats([Fr(p) for p in pts], m); check(AT, G, BT, m)
    ATf = [[float(x) for x in r] for r in AT]; BTf = [[float(x) for x in r] for r in BT]
    n = m + 2
    rnd = random.Random(seed)
    maxe = 0; se = 0; cnt = 0
    s = 1/math.sqrt(C*9)
    O = 4
    w = [[[[f(rnd.gauss(0,1)*s) for _ in range(3)] for _ in range(3)] for _ in range(C)] for _ in range(O)]
    # U in double rounded once
    U = []
    for o in range(O):
        Uo = []
        for c in range(C):
            g = w[o][c]
            t = [[sum(float(G[i][r])*g[r][k] for r in range(3)) for k in range(3)] for i in range(n)]
            Uo.append([[f(sum(t[i][k]*float(G[l][k]) for k in range(3))) for l in range(n)] for i in range(n)])
        U.append(Uo)
    for t in range(tiles):
        d = [[[f(rnd.gauss(0,1)) for _ in range(n)] for _ in range(n)] for _ in range(C)]
        V = []
        for c in range(C):
            cols = [mm32(BTf, [d[c][i][k] for i in range(n)]) for k in range(n)]  # cols[k][i]
            tt = [[cols[k][i] for k in range(n)] for i in range(n)]
            V.append([mm32(BTf, tt[i]) for i in range(n)])  # V[i][l]
        for o in range(O):
            M = [[0.0]*n for _ in range(n)]
            for i in range(n):
                for l in range(n):
                    acc = 0.0
                    for c in range(C): acc = f(U[o][c][i][l]*V[c][i][l] + acc)
                    M[i][l] = acc
            cols = [mm32(ATf, [M[i][l] for i in range(n)]) for l in range(n)]
            tt = [[cols[l][a] for l in range(n)] for a in range(m)]
            Y = [mm32(ATf, tt[a]) for a in range(m)]
            for a in range(m):
                for b in range(m):
                    ref = sum(w[o][c][r][k]*d[c][a+r][b+k] for c in range(C) for r in range(3) for k in range(3))
                    e = abs(Y[a][b]-ref); maxe = max(maxe, e); se += e*e; cnt += 1
    return maxe, math.sqrt(se/cnt)
import sys
for name, pts, m in [("F2 0,1,-1", [0,1,-1], 2), ("F4 0,1,-1,2,-2", [0,1,-1,2,-2], 4), ("F4 0,1,-1,1/2,-1/2", [0,1,-1,Fr(1,2),Fr(-1,2)], 4), ("F4 0,-1,1,1/2,-2", [0,-1,1,Fr(1,2),-2], 4)]:
    print(name, "max %.2e rms %.2e" % run(pts, m, tiles=int(sys.argv[1]) if len(sys.argv) > 1 else 60), flush=True)

"""The smallest flashc call: causal grouped-query attention on numpy arrays
(the CPU), checked against a float64 numpy computation."""

import numpy as np

import flashc


def main():
    rng = np.random.default_rng(0)
    # [batch, heads, tokens, head dim]: 8 query heads share 2 KV heads.
    q = rng.standard_normal((1, 8, 256, 64)).astype(np.float32)
    k = rng.standard_normal((1, 2, 256, 64)).astype(np.float32)
    v = rng.standard_normal((1, 2, 256, 64)).astype(np.float32)

    o, lse = flashc.attention(q, k, v, causal=True, return_lse=True)

    # The same in float64 with numpy.
    kk = np.repeat(k, 4, axis=1).astype(np.float64)
    vv = np.repeat(v, 4, axis=1).astype(np.float64)
    s = (q.astype(np.float64) @ kk.transpose(0, 1, 3, 2)) / np.sqrt(64)
    s = np.where(np.tri(256, dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    expected = (p / p.sum(-1, keepdims=True)) @ vv
    print(f"output {o.shape} {o.dtype}, lse {lse.shape}")
    print(f"max |error| against float64: {np.abs(o - expected).max():.2e}")


if __name__ == "__main__":
    main()

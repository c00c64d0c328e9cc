"""The IO cost model against sequence length: HBM elements moved by the
standard (materialised S and P), algorithm-1 and FA2 loop orders, from
flashc.cost. Plots with matplotlib when it is installed (--plot FILE),
else prints a table.

    python3 io_cost.py [--target sm_80] [--head-dim 64] [--plot cost.png]
"""

import argparse

import flashc

ORDERS = ("standard", "algorithm1", "fa2")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", default="sm_80")
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--plot", help="write a plot to this file")
    args = parser.parse_args()

    lengths = [512 * 2**i for i in range(6)]
    rows = []
    for n in lengths:
        spec = flashc.AttentionSpec(heads=16, seq_q=n, seq_kv=n,
                                    head_dim=args.head_dim, dtype="f16")
        report = flashc.cost(spec, target=args.target)
        rows.append([report["hbmElements"][o]["total"] for o in ORDERS])

    plotted = False
    if args.plot:
        try:
            import matplotlib  # pylint: disable=import-outside-toplevel
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
        except ImportError:
            print("matplotlib is not installed; printing a table instead")
        else:
            for i, order in enumerate(ORDERS):
                plt.loglog(lengths, [r[i] for r in rows], marker="o",
                           label=order)
            plt.xlabel("sequence length")
            plt.ylabel("HBM elements moved")
            plt.title(f"{args.target}, 16 heads, d = {args.head_dim}, f16")
            plt.legend()
            plt.savefig(args.plot)
            print(f"wrote {args.plot}")
            plotted = True
    if not plotted:
        print(f"HBM elements moved ({args.target}, 16 heads, "
              f"d = {args.head_dim}, f16)")
        print(f"{'N':>7} " + " ".join(f"{o:>14}" for o in ORDERS) +
              f" {'standard/fa2':>13}")
        for n, r in zip(lengths, rows):
            print(f"{n:>7} " + " ".join(f"{x:>14}" for x in r) +
                  f" {r[0] / r[2]:>13.1f}")


if __name__ == "__main__":
    main()

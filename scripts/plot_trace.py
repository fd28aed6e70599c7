"""Draws a Chrome trace written by `asyncflow.python.client.timeline` as a PNG: one row per device lane,
a box per op (coloured by kind: transfers, variables and queues, compute), an arrow per flow event.

    python scripts/plot_trace.py trace.json [--out docs/trace.png] [--title "..."]

`scripts/sync_vs_async_sgd.py --trace trace.json` writes such a trace (one synchronous training step
across the cluster); chrome://tracing or https://ui.perfetto.dev open the JSON itself interactively.
Needs matplotlib (`pip install -e '.[examples]'`).
"""

from __future__ import annotations

import argparse
import json
import sys

KINDS = [  # (label, colour, op types or prefixes)
    ("transfer (_Send/_Recv)", "#e8853d", ("_Send", "_Recv")),
    ("variable / queue / accumulator", "#59a14f", ("Variable", "Assign", "Apply", "Queue", "Accumulator",
                                                    "Identity", "TakeGrad", "ScatterAdd", "Scatter")),
    ("compute", "#4e79a7", ()),
]


def kind_of(op: str) -> int:
    for k, (_, _, prefixes) in enumerate(KINDS[:-1]):
        if op.startswith(prefixes) or any(p in op for p in prefixes):
            return k
    return len(KINDS) - 1


def short_device(name: str) -> str:
    """"/job:worker/replica:0/task:1/device:CPU:0 Compute" -> "worker:1"."""
    parts = dict(p.split(":", 1) for p in name.split()[0].strip("/").split("/") if ":" in p)
    return f"{parts.get('job', '?')}:{parts.get('task', '?')}"


def load(path: str) -> tuple[list[dict], list[tuple[int, int, str]], list[tuple[dict, dict]]]:
    """(op events, lanes as (pid, tid, label) in order, flows as (start, end) event pairs)."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    ops = [e for e in events if e["ph"] == "X"]
    used = sorted({(e["pid"], e["tid"]) for e in ops})
    lanes = [(pid, tid, f"{short_device(processes[pid])}  {threads.get((pid, tid), tid)}") for pid, tid in used]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    flows = [(starts[e["id"]], e) for e in events if e["ph"] == "t" and e["id"] in starts]
    return ops, lanes, flows


def plot(path: str, out: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    ops, lanes, flows = load(path)
    row = {(pid, tid): k for k, (pid, tid, _) in enumerate(lanes)}
    t0 = min(e["ts"] for e in ops)
    fig, ax = plt.subplots(figsize=(12, 0.55 * len(lanes) + 1.6))
    end = max(e["ts"] + e["dur"] for e in ops)
    span = (end - t0) / 1000.0
    for e in ops:
        y = row[(e["pid"], e["tid"])]
        x, w = (e["ts"] - t0) / 1000.0, max(e["dur"] / 1000.0, span / 1500)
        ax.barh(y, w, left=x, height=0.6, color=KINDS[kind_of(e["name"])][1], edgecolor="none")
        if w > span / 14:  # long enough to carry its name
            ax.text(x + w / 2, y, e["args"]["name"], ha="center", va="center", fontsize=6.5, color="white",
                    clip_on=True)
    for start, stop in flows:
        if start["pid"] == stop["pid"]:
            continue  # within a device: the lanes show it
        xs, ys = (start["ts"] - t0) / 1000.0, row[(start["pid"], start["tid"])]
        xe, ye = (stop["ts"] - t0) / 1000.0, row[(stop["pid"], stop["tid"])]
        ax.annotate("", xy=(xe, ye), xytext=(xs, ys),
                    arrowprops=dict(arrowstyle="->", color="#b03a2e", lw=0.8, alpha=0.8, shrinkA=0, shrinkB=0))
    ax.set_yticks(range(len(lanes)), [label for _, _, label in lanes], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time since the step's first op (ms)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=c, label=label) for label, c, _ in KINDS]
    handles.append(matplotlib.lines.Line2D([], [], color="#b03a2e", lw=0.8, label="transfer (flow arrow)"))
    ax.legend(handles=handles, loc="upper right", fontsize=7, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--out", default="docs/trace.png")
    parser.add_argument("--title", default="one synchronous SGD step across the cluster (asyncflow timeline)")
    args = parser.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[examples]')", file=sys.stderr)
        return 1
    plot(args.trace, args.out, args.title)
    print(f"plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


#!/usr/bin/env python3
"""Prints the folder include graph of src/, kernels/ and apps/: one "from -> to (includes)" line
per edge, or with --dot a Graphviz digraph (edges a folder may not use drawn red)."""
import argparse
import collections
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_layers import ALLOWED, LAYERS, includes  # noqa: E402  (the one layer table)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent,
                        type=pathlib.Path, help="source tree (default: this script's checkout)")
    parser.add_argument("--dot", action="store_true", help="print the graph as Graphviz DOT")
    args = parser.parse_args()
    edges = collections.Counter((a, b) for _, _, a, b in includes(args.root))
    if not args.dot:
        for (a, b), count in sorted(edges.items()):
            print(f"{a} -> {b} ({count})")
        return
    print("digraph layers {\n  rankdir=BT;\n  node [shape=box];")
    for folder in LAYERS:
        print(f'  "{folder}";')
    for (a, b), count in sorted(edges.items()):
        bad = ", color=red" if b not in ALLOWED.get(a, ()) else ""
        print(f'  "{a}" -> "{b}" [label={count}{bad}];')
    print("}")


if __name__ == "__main__":
    main()

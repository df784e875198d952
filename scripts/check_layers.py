#!/usr/bin/env python3
"""Checks that the folders keep their layer order (docs/design/architecture.md, "Layout").

Fails (exit 1, one line per violation) when a source file in src/, kernels/ or apps/ includes a
folder its own folder may not use, when the folder include graph has a cycle, when a folder's
CMake library links a library its folder may not use, or when src/train exceeds
--train-max-lines lines (.h + .cpp). Standard library only.
"""
import argparse
import pathlib
import re
import sys

# The layers, top first: a folder may use the folders above it, never one below.
LAYERS = ["src/core", "kernels", "src/comm", "src/tensor_parallel", "src/model", "src/zero",
          "src/data", "src/pipeline", "src/config", "src/checkpoint", "src/generate", "src/train",
          "src/faults", "src/planner", "apps"]
# Exceptions to "everything above": the planner runs without the training loop (it reads the
# same options table and partition code, so `estimate` needs no Trainer).
FORBIDDEN = {"src/planner": {"src/train", "src/faults"}}
ALLOWED = {f: set(LAYERS[:i]) - FORBIDDEN.get(f, set()) for i, f in enumerate(LAYERS)}

SOURCE_ROOTS = ("src", "kernels", "apps")
SUFFIXES = {".h", ".hpp", ".cpp", ".cu", ".cuh", ".inc"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LINK = re.compile(r"target_link_libraries\s*\(([^)]*)\)", re.S)
LIBRARY = re.compile(r"add_(?:library|executable)\s*\(\s*([\w-]+)")


def folder_of(rel):
    """The layer a root-relative path belongs to (kernels/* is one layer), or None."""
    parts = pathlib.PurePosixPath(rel).parts
    if parts and parts[0] in ("kernels", "apps"):
        return parts[0]
    if len(parts) > 2 and parts[0] == "src":
        return "src/" + parts[1]
    return None


def source_files(root):
    for top in SOURCE_ROOTS:
        for path in sorted((root / top).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file():
                yield path


def includes(root):
    """(file, line, from_folder, to_folder) for every quoted include between two folders."""
    for path in source_files(root):
        rel = path.relative_to(root).as_posix()
        for number, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(text)
            if not match:
                continue
            target = match.group(1)
            # Quoted includes resolve next to the file first, then from the source root.
            beside = path.parent / target
            if beside.is_file():
                target = beside.resolve().relative_to(root.resolve()).as_posix()
            source, dest = folder_of(rel), folder_of(target)
            if dest and dest != source:
                yield rel, number, source, dest


def cycles(edges):
    """One cycle (a list of folders, first repeated last) per strongly connected knot."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    found, done = [], set()

    def walk(node, stack):
        if node in stack:
            cycle = stack[stack.index(node):] + [node]
            if frozenset(cycle) not in done:
                done.add(frozenset(cycle))
                found.append(cycle)
            return
        if node in visited:
            return
        visited.add(node)
        for nxt in sorted(graph.get(node, ())):
            walk(nxt, stack + [node])

    visited = set()
    for start in sorted(graph):
        walk(start, [])
    return found


def link_violations(root):
    """Libraries (and apps' executable) linking a project library of a folder they may not use."""
    lists = sorted(p for top in SOURCE_ROOTS for p in (root / top).rglob("CMakeLists.txt"))
    texts = {p: re.sub(r"#[^\n]*", "", p.read_text()) for p in lists}
    owner = {}  # target name -> folder that declares it
    for path, text in texts.items():
        for name in LIBRARY.findall(text):
            owner[name] = folder_of(path.relative_to(root).as_posix())
    for path, text in texts.items():
        rel = path.relative_to(root).as_posix()
        for match in LINK.finditer(text):
            target, *linked = match.group(1).split()
            source = owner.get(target)
            line = text.count("\n", 0, match.start()) + 1
            for lib in linked:
                dest = owner.get(lib)
                if source and dest and dest != source and dest not in ALLOWED.get(source, ()):
                    yield f"{rel}:{line}: {target} ({source}) links {lib} ({dest})"


def line_count(root, folder):
    files = [p for p in (root / folder).rglob("*") if p.suffix in (".h", ".cpp") and p.is_file()]
    return sum(len(p.read_text(errors="replace").splitlines()) for p in files)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent,
                        type=pathlib.Path, help="source tree (default: this script's checkout)")
    parser.add_argument("--train-max-lines", type=int, help="fail when src/train is longer")
    args = parser.parse_args()
    root = args.root
    problems, edges = [], set()
    for rel, number, source, dest in includes(root):
        edges.add((source, dest))
        if source not in ALLOWED:
            problems.append(f"{rel}:{number}: {source} is not a layer in check_layers.py")
        elif dest not in ALLOWED:
            problems.append(f"{rel}:{number}: {source} includes {dest}, not a layer")
        elif dest not in ALLOWED[source]:
            problems.append(f"{rel}:{number}: {source} includes {dest}, which it may not use")
    for cycle in cycles(edges):
        problems.append("include cycle: " + " -> ".join(cycle))
    problems.extend(link_violations(root))
    lines = line_count(root, "src/train")
    print(f"src/train: {lines} lines (.h + .cpp)")
    if args.train_max_lines is not None and lines > args.train_max_lines:
        problems.append(f"src/train: {lines} lines, more than --train-max-lines "
                        f"{args.train_max_lines}")
    for problem in problems:
        print(problem)
    print(f"check_layers: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

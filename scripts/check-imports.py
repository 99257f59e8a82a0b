#!/usr/bin/env python3
"""Fails when a target imports a module its entry in Package.swift does not declare, or when a
target depends on, or imports, one of the package's own targets that is not below it.

Some targets may not use certain modules or names at all (BANNED): the engine imports no NIO and
names no generated protobuf message.

SwiftPM lets a target import any module in its dependency closure, so an import nobody declared
compiles as long as something else happens to pull the module in: this check makes the manifest
the whole truth about what depends on what. The layers below are the architecture of
docs/ARCHITECTURE.md: a target may use only the shared bottom and the targets of its own side
that rank below it (siblings such as SyncSQLite and SyncServer never see each other). Tests may
reach any target, but still only through what they declare.

    scripts/check-imports.py [PACKAGE_DIR]

Reads the manifest with `swift package dump-package`; prints each violation with its file and
line; exits 1 when there is one.
"""
import json
import pathlib
import re
import subprocess
import sys

# The package's own targets: (side, rank). A target may use a target of the "shared" side or of
# its own side, of a lower rank.
LAYERS = {
    "SharedStateWire": ("shared", 0),
    "CRC32CInstruction": ("shared", 0),
    "EtcdClient": ("shared", 0),
    "SyncEngine": ("daemon", 1),
    "SyncSQLite": ("daemon", 2),
    "SyncEtcd": ("daemon", 2),
    "SyncServer": ("daemon", 2),
    "SyncDaemon": ("daemon", 3),
    "syncd": ("daemon", 4),
    "SyncClient": ("client", 1),
    "FeatureStore": ("client", 1),
    "SharedState": ("client", 2),
    "ClimateFeatures": ("client", 3),
    "climate-sensor": ("client", 4),
    "climate-thermostat": ("client", 4),
    "climate-panel": ("client", 4),
    "feature-bench": ("client", 4),
    "syncctl": ("client", 4),
    "etcd-bench": ("shared", 4),
    # What test targets share (the seeded generator): nothing of the package's below it.
    "TestSupport": ("shared", 0),
}

# What a target may not use even when declared: the engine holds values and decides, the server
# owns the event loops and the frames (docs/ARCHITECTURE.md). Modules it may not import, and
# names it may not write (the protocol's generated message types).
BANNED = {
    "SyncEngine": {
        "modules": re.compile(r"^NIO"),
        "names": re.compile(r"\bSharedstate_V1_[A-Za-z_]+"),
        "why": "the engine speaks in values; event loops and protocol messages are the server's and the wire's",
    },
}

# Modules of the toolchain and the platform: never declared in a manifest.
SYSTEM = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "FoundationInternationalization",
    "Glibc", "Musl", "Darwin", "Dispatch", "Synchronization", "_Concurrency", "Observation",
    "Testing", "XCTest", "RegexBuilder", "_StringProcessing", "Distributed", "Swift", "CoreFoundation",
}

IMPORT = re.compile(
    r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*import\s+"
    r"(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)"
)


def module_name(target: str) -> str:
    """The module a target builds: its name with the characters a module name cannot hold as _."""
    return re.sub(r"[^A-Za-z0-9_]", "_", target)


def declared(dependency: dict) -> str:
    (kind, value), = dependency.items()
    return value[0]


def source_directory(root: pathlib.Path, target: dict) -> pathlib.Path:
    if target.get("path"):
        return root / target["path"]
    return root / ("Tests" if target["type"] == "test" else "Sources") / target["name"]


def check(root: pathlib.Path) -> list[str]:
    manifest = json.loads(subprocess.run(
        ["swift", "package", "--package-path", str(root), "dump-package"],
        check=True, capture_output=True, text=True).stdout)
    own = {module_name(target["name"]): target["name"] for target in manifest["targets"]}
    problems = []
    for target in manifest["targets"]:
        name = target["name"]
        dependencies = [declared(dependency) for dependency in target["dependencies"]]
        allowed = {module_name(dependency) for dependency in dependencies} | {module_name(name)}
        layer = LAYERS.get(name)
        if target["type"] != "test" and layer is None:
            problems.append(f"Package.swift: target {name} has no layer in scripts/check-imports.py")
        if layer is not None:
            for dependency in dependencies:
                if dependency in own.values() and not may_use(layer, LAYERS.get(dependency)):
                    problems.append(f"Package.swift: {name} ({describe(layer)}) depends on {dependency} "
                                    f"({describe(LAYERS.get(dependency))}), which is not below it")
        for file in sorted(source_directory(root, target).rglob("*.swift")):
            in_string = False
            for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
                # Inside a multi-line string literal (a script a test runs), an import is text.
                if line.count('"""') % 2 == 1:
                    in_string = not in_string
                    continue
                banned = BANNED.get(name)
                if banned and not in_string and not line.lstrip().startswith("//"):
                    used = banned["names"].search(line)
                    if used:
                        problems.append(f"{file.relative_to(root)}:{number}: {name} uses {used.group(0)}: {banned['why']}")
                match = None if in_string else IMPORT.match(line)
                if not match:
                    continue
                module = match.group(1)
                where = f"{file.relative_to(root)}:{number}"
                if banned and banned["modules"].search(module):
                    problems.append(f"{where}: {name} imports {module}: {banned['why']}")
                    continue
                if module in SYSTEM or module == module_name(name):
                    continue
                if module not in allowed:
                    problems.append(f"{where}: {name} imports {module}, which its entry in Package.swift does not declare")
                elif layer is not None and module in own and not may_use(layer, LAYERS.get(own[module])):
                    problems.append(f"{where}: {name} ({describe(layer)}) imports {own[module]} "
                                    f"({describe(LAYERS.get(own[module]))}), which is not below it")
    return problems


def may_use(user: tuple, used: tuple | None) -> bool:
    if used is None:
        return False
    side, rank = user
    used_side, used_rank = used
    return used_rank < rank and used_side in ("shared", side)


def describe(layer: tuple | None) -> str:
    return "no layer" if layer is None else f"{layer[0]} side, rank {layer[1]}"


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems = check(root)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check-imports: {len(problems)} import(s) the manifest and the layers do not allow", file=sys.stderr)
        return 1
    print("check-imports: every import is declared and points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())

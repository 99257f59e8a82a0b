#!/usr/bin/env python3
"""Every Swift snippet of the DocC articles (Sources/**/*.docc) is code the tests compile: the line
before it names the region of a test or an example it is taken from,

    <!-- snippet: lobby-feature -->

a region being the lines between `// snippet: lobby-feature` and `// snippet end` in a file under
Tests/ or Examples/ (as the formatter left them, less their common indentation). A snippet that
cannot be compiled as it stands (a fragment of a Package.swift, a program's `@main`) says why:

    <!-- not compiled: a fragment of a Package.swift -->

`--fix` rewrites each article's snippet from its region; without it, exits 1 naming each snippet
that differs from its region, names none, or names a region that does not exist."""

import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMED = re.compile(r"<!--\s*snippet:\s*([\w-]+)\s*-->")
EXEMPT = re.compile(r"<!--\s*not compiled:\s*\S.*-->")
START = re.compile(r"^\s*// snippet: ([\w-]+)\s*$")
END = re.compile(r"^\s*// snippet end\s*$")


def regions() -> dict[str, str]:
    found: dict[str, str] = {}
    for folder in ("Tests", "Examples"):
        for path in sorted((ROOT / folder).rglob("*.swift")):
            name, body = None, []
            for line in path.read_text().split("\n"):
                if name is None:
                    match = START.match(line)
                    if match:
                        name, body = match.group(1), []
                elif END.match(line):
                    found[name] = textwrap.dedent("\n".join(body)).strip("\n")
                    name = None
                else:
                    body.append(line)
    return found


def main() -> int:
    fix = "--fix" in sys.argv[1:]
    known = regions()
    problems, count = [], 0
    for article in sorted(ROOT.glob("Sources/**/*.docc/**/*.md")):
        lines = article.read_text().split("\n")
        changed = False
        index = 0
        while index < len(lines):
            if lines[index].strip() != "```swift":
                index += 1
                continue
            count += 1
            start = index
            end = start + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            body = "\n".join(lines[start + 1 : end])
            before = next((line for line in reversed(lines[:start]) if line.strip()), "")
            place = f"{article.relative_to(ROOT)}:{start + 1}"
            named = NAMED.search(before)
            if named:
                region = known.get(named.group(1))
                if region is None:
                    problems.append(f"{place} names the region {named.group(1)!r}, which no test or example marks")
                elif body != region:
                    if fix:
                        lines[start + 1 : end] = region.split("\n")
                        end = start + 1 + len(region.split("\n"))
                        changed = True
                    else:
                        problems.append(f"{place} differs from the region {named.group(1)!r} (scripts/check-doc-snippets.py --fix copies it)")
            elif not EXEMPT.search(before):
                problems.append(f"{place} names no region (<!-- snippet: NAME -->) and no reason it is not compiled")
            index = end + 1
        if changed:
            article.write_text("\n".join(lines))
    for problem in problems:
        print(f"check-doc-snippets: {problem}")
    if problems:
        return 1
    print(f"check-doc-snippets: {count} snippets, each a compiled region of a test or example or saying why not")
    return 0


if __name__ == "__main__":
    sys.exit(main())

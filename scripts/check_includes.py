#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks that no file includes another library's private header.

Usage: check_includes.py [SOURCE_DIR]   (ctest: layering.includes)

Every #include in the C sources and headers under src/, include/, examples/,
tests/ and bench/ is resolved to a file of the repository (beside the
including file, then under include/, src/ and tests/, then by the end of its
path: `"store.h"` found through an include directory). One that resolves to
no file of the repository is a system or third-party header, and allowed.

The libraries and their private folders:
    core          src/core/, src/file/
    remote        src/remote/
    guard         src/guard/
    cli           src/cli/
    redis_module  src/redis_module/
    (any other src/NAME/ is a library NAME)
    products      examples/products/ (the reference service; for the tests)
Shared by several libraries, and private to none: src/common/.
Public: include/bloomgate/.

The rules:
    lib      a file of a library includes its own library's headers,
             src/common/, public headers and system headers
    common   src/common/ includes src/common/, public and system headers
    public   include/bloomgate/ includes public and system headers
    example  a file under examples/ (the products service included) includes
             public headers and those of its own folder (examples/NAME/, or
             the files directly in examples/)
    test     a file under tests/ or bench/ includes public headers,
             src/common/, the test helpers (tests/), bench/'s own headers
             (from bench/), and the private headers of one library at most:
             the one it tests or measures (unit tests of the core include
             src/core/*.h; a guard test may not also include src/remote/*.h)

A violation prints FILE:LINE, the header, whose it is and the rule, and the
script exits 1.
"""
import os
import re
import sys

SCANNED = ("src", "include", "examples", "tests", "bench")
EXTENSIONS = (".c", ".h", ".cc", ".cpp")
# Folders of src/ that form one library together.
LIBRARY_OF_SRC = {"core": "core", "file": "core"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')

RULES = {
    "lib": "a library's files include only their own library's headers, src/common/, "
           "public <bloomgate/...> headers and system headers",
    "common": "src/common/ includes only src/common/, public and system headers",
    "public": "public headers include only public and system headers",
    "example": "examples include only public headers and their own folder's headers",
    "test": "a test or benchmark includes the private headers of one library at most "
            "(the one it tests), besides public headers, src/common/ and test helpers",
    "test-helper": "only tests/ and bench/ include the test helpers (tests/)",
}


def area(rel):
    """(kind, name) of a repository path: who owns the file."""
    parts = rel.split("/")
    if parts[0] == "include":
        return ("public", "public")
    if parts[0] == "src" and len(parts) > 2:
        if parts[1] == "common":
            return ("common", "common")
        return ("lib", LIBRARY_OF_SRC.get(parts[1], parts[1]))
    if parts[0] == "examples":
        unit = parts[1] if len(parts) > 2 else ""
        if unit == "products":
            return ("example", "products")
        return ("example", "examples/" + unit if unit else "examples")
    if parts[0] in ("tests", "bench"):
        return (parts[0], parts[0])
    return ("other", parts[0])


def private_owner(rel):
    """The library whose private header rel is, or None."""
    kind, name = area(rel)
    if kind == "lib":
        return name
    if kind == "example" and name == "products":
        return "products"
    return None


def scan(root):
    files = []
    for top in SCANNED:
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for n in sorted(names):
                if n.endswith(EXTENSIONS):
                    files.append(os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/"))
    return files


def resolver(root, files):
    headers = set(files)
    by_suffix = {}
    for h in files:
        p = h.split("/")
        for i in range(1, len(p)):
            by_suffix.setdefault("/".join(p[i:]), []).append(h)

    def resolve(src, name, quoted):
        cands = []
        if quoted:
            cands.append(os.path.normpath(os.path.join(os.path.dirname(src), name)))
        for base in ("include", "src", "tests"):
            cands.append(os.path.normpath(os.path.join(base, name)))
        for c in cands:
            c = c.replace(os.sep, "/")
            if c in headers:
                return [c]
        return by_suffix.get(os.path.normpath(name).replace(os.sep, "/"), [])

    return resolve


def allowed(src, target, first_private):
    """None if src may include target, else the rule it breaks. first_private:
    the library whose private header a test file included first (or None)."""
    kind, name = area(src)
    tkind, tname = area(target)
    if tkind == "public":
        return None
    if kind == "public":
        return "public"
    if kind == "common":
        return None if tkind == "common" else "common"
    if kind == "lib":
        return None if tkind == "common" or (tkind == "lib" and tname == name) else "lib"
    if kind == "example":
        return None if (tkind, tname) == (kind, name) else "example"
    if kind in ("tests", "bench"):
        if tkind in ("common", "tests") or (kind == "bench" and tkind == "bench"):
            return None
        owner = private_owner(target)
        if owner is None:
            return "test"
        if first_private is None or first_private == owner:
            return None
        return "test"
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = scan(root)
    resolve = resolver(root, files)
    bad = 0
    for src in files:
        first_private = None  # (library, line, header) of a test's first private include
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for no, line in enumerate(lines, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            quoted, name = m.group(1) == '"', m.group(2)
            cands = resolve(src, name, quoted)
            if not cands:
                continue  # a system or third-party header
            lib = first_private[0] if first_private else None
            verdicts = [(c, allowed(src, c, lib)) for c in cands]
            if any(v is None for _, v in verdicts):
                ok = next(c for c, v in verdicts if v is None)
                owner = private_owner(ok)
                if area(src)[0] in ("tests", "bench") and owner and first_private is None:
                    first_private = (owner, no, name)
                continue
            target, rule = verdicts[0]
            if area(target)[0] == "tests" and rule != "public":
                rule = "test-helper"
            owner = private_owner(target) or area(target)[1]
            extra = ""
            if rule == "test" and first_private:
                extra = " (line %d already includes %s's %s)" % (
                    first_private[1], first_private[0], first_private[2])
            print("%s:%d: includes %s (%s, private to %s)%s: %s"
                  % (src, no, name, target, owner, extra, RULES[rule]))
            bad += 1
    if bad:
        print("check_includes: %d include(s) break the layering rules (scripts/check_includes.py "
              "lists them)" % bad)
        return 1
    print("check_includes: %d files, every include follows the layering rules" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks that the relative links of the Markdown files resolve.

Usage: check_links.py [SOURCE_DIR]   (ctest: layering.links)
       check_links.py --self-test     (ctest: layering.links.self_test)

The files are git's tracked *.md files (outside a git checkout, every *.md
under SOURCE_DIR but build trees, .deps, node_modules and hidden
directories). In each, every link that names no scheme is checked:

    [text](path)  [text](path#anchor)  [text](#anchor)  ![alt](path)
    [label]: path#anchor        (a reference definition)
    [text][label]               (its label must be defined in the file)

The path, relative to the Markdown file (or to SOURCE_DIR when it starts
with '/', as GitHub reads it), must exist. An anchor into a Markdown file
must be one of its headings' anchors, made as GitHub makes them: the
heading's text, lower-cased; every character but letters, digits, spaces,
'-' and '_' dropped; each space a '-'; the second heading with the same
anchor gets '-1', the third '-2', and so on. An explicit <a id="..."> or
<a name="..."> counts too. Anchors into other files are not checked.

Links with a scheme (http:, https:, mailto:, ...) are left alone, and so is
whatever is inside fenced code blocks, inline code and HTML comments.

Prints each broken link as FILE:LINE: TARGET (REASON) and exits 1 if there
is one, or if no Markdown file was found (a check that finds nothing passes
for the wrong reason); 0 otherwise.
"""

import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

SKIP_DIRS = ('.deps', '.git', 'node_modules')


def is_skipped(rel):
    """Build trees, .deps, node_modules and hidden directories hold no docs
    of ours."""
    for part in rel.split('/')[:-1]:
        if part in SKIP_DIRS or part.startswith('.') or part == 'build' or part.startswith('build-'):
            return True
    return False


def markdown_files(root):
    """The tracked *.md files of root (paths relative to it, '/'-separated)."""
    try:
        top = subprocess.run(['git', 'rev-parse', '--show-toplevel'], cwd=root,
                             capture_output=True, text=True, check=True).stdout.strip()
        in_git = os.path.realpath(top) == os.path.realpath(root)
    except (OSError, subprocess.CalledProcessError):
        in_git = False
    if in_git:
        out = subprocess.run(['git', 'ls-files', '-z', '--', '*.md'], cwd=root,
                             capture_output=True, check=True).stdout
        files = [f.decode() for f in out.split(b'\0') if f]
        # Deleted in the work tree but not yet staged: not a file any more.
        files = [f for f in files if os.path.isfile(os.path.join(root, f))]
    else:
        files = []
        for d, dirs, names in os.walk(root):
            rel = os.path.relpath(d, root)
            dirs[:] = [x for x in dirs
                       if not is_skipped((x if rel == '.' else rel + '/' + x) + '/x')]
            for n in names:
                if n.endswith('.md'):
                    files.append(n if rel == '.' else (rel + '/' + n).replace(os.sep, '/'))
    return sorted(f for f in files if not is_skipped(f))


# ---- reading a Markdown file ------------------------------------------------

FENCE = re.compile(r'^[ \t]*(`{3,}|~{3,})(.*)$')


def blank(s):
    """s with every character but newlines made a space: positions and line
    numbers stay where they were."""
    return re.sub(r'[^\n]', ' ', s)


def strip_fences(text):
    """Blanks fenced code blocks (the fences included). A block opened by n
    backticks (tildes) closes at a line of at least n of them and nothing
    else; an unclosed one runs to the end of the file."""
    lines = text.split('\n')
    out = []
    fence = None
    for line in lines:
        m = FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == '`' and '`' in m.group(2)):
                fence = m.group(1)
                out.append(blank(line))
            else:
                out.append(line)
        else:
            out.append(blank(line))
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not m.group(2).strip():
                fence = None
    return '\n'.join(out)


def strip_comments(text):
    return re.sub(r'<!--.*?-->', lambda m: blank(m.group(0)), text, flags=re.S)


def strip_code_spans(text):
    """Blanks inline code: a run of n backticks up to the next run of exactly
    n, within one paragraph (no blank line between). A run without its match
    is literal text."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        if text[i] != '`':
            j = text.find('`', i)
            if j < 0:
                out.append(text[i:])
                break
            out.append(text[i:j])
            i = j
            continue
        j = i
        while j < n and text[j] == '`':
            j += 1
        run = j - i
        close = re.compile(r'(?<!`)`{%d}(?!`)' % run)
        m = close.search(text, j)
        para_end = re.compile(r'\n[ \t]*\n').search(text, j)
        if m and (para_end is None or m.start() < para_end.start()):
            out.append(blank(text[i:m.end()]))
            i = m.end()
        else:
            out.append(text[i:j])
            i = j
    return ''.join(out)


def prose(text):
    """The text links and headings are read from: no code, no comments."""
    return strip_code_spans(strip_comments(strip_fences(text)))


# ---- anchors -----------------------------------------------------------------

ATX = re.compile(r'^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$')
SETEXT = re.compile(r'^ {0,3}(=+|-+)[ \t]*$')
EXPLICIT = re.compile(r'<a\s+(?:[^>]*?\s)?(?:id|name)\s*=\s*["\']([^"\']+)["\']', re.I)


def heading_text(raw):
    """What GitHub shows of a heading's Markdown: link and image texts, no
    backticks, no emphasis stars, no HTML tags."""
    s = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', raw)
    s = re.sub(r'!?\[([^\]]*)\]\[[^\]]*\]', r'\1', s)
    s = re.sub(r'<[^>]+>', '', s)
    s = s.replace('`', '').replace('*', '')
    return s.strip()


def slug(text):
    s = text.lower()
    s = ''.join(c for c in s if c.isalnum() or c in ' -_')
    return s.replace(' ', '-')


def anchors_of(text):
    """Every anchor a reader can link to in this Markdown text."""
    body = strip_comments(strip_fences(text))
    seen = set()
    counts = {}

    def add(name):
        base = name
        if base in seen:
            k = counts.get(base, 1)
            while '%s-%d' % (base, k) in seen:
                k += 1
            counts[base] = k + 1
            name = '%s-%d' % (base, k)
        seen.add(name)

    lines = body.split('\n')
    for i, line in enumerate(lines):
        m = ATX.match(line)
        if m:
            add(slug(heading_text(m.group(2) or '')))
            continue
        if i > 0 and SETEXT.match(line) and lines[i - 1].strip() \
                and not ATX.match(lines[i - 1]) and not SETEXT.match(lines[i - 1]) \
                and not lines[i - 1].lstrip().startswith(('|', '-', '*', '>')):
            add(slug(heading_text(lines[i - 1])))
    explicit = set(EXPLICIT.findall(strip_code_spans(body)))
    return seen | explicit


# ---- links -------------------------------------------------------------------

# [text](dest "title"): text may hold one level of brackets; dest is <...>
# or has balanced parentheses one level deep.
INLINE = re.compile(
    r'(!?)\[((?:[^\[\]\\]|\\.|\[[^\[\]]*\])*)\]'
    r'\(\s*(<[^>\n]*>|(?:[^\s()\\]|\\.|\([^\s()]*\))*)'
    r'(?:\s+(?:"[^"]*"|\'[^\']*\'|\([^)]*\)))?\s*\)')
REFDEF = re.compile(r'^ {0,3}\[((?:[^\]\\]|\\.)+)\]:[ \t]*(<[^>\n]*>|\S+)', re.M)
FULLREF = re.compile(r'(?<![\w\]\\])\[((?:[^\[\]\\]|\\.|\[[^\[\]]*\])+)\]\[((?:[^\[\]\\]|\\.)*)\]')
SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')


def label_key(label):
    return ' '.join(label.split()).lower()


def links_of(text):
    """(offset, destination) of every link to check, and (offset, label) of
    every full reference whose label has no definition."""
    body = prose(text)
    links = []
    defs = set()
    for m in REFDEF.finditer(body):
        defs.add(label_key(m.group(1)))
        links.append((m.start(2), m.group(2)))
    for m in INLINE.finditer(body):
        links.append((m.start(3), m.group(3)))
    undefined = []
    for m in FULLREF.finditer(body):
        label = m.group(2) or m.group(1)
        if label_key(label) not in defs:
            undefined.append((m.start(), label))
    return links, undefined


class Checker:
    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.anchor_cache = {}
        self.problems = []
        self.checked = 0

    def anchors(self, path):
        if path not in self.anchor_cache:
            with open(path, encoding='utf-8', errors='replace') as f:
                self.anchor_cache[path] = anchors_of(f.read())
        return self.anchor_cache[path]

    def report(self, rel, text, offset, target, reason):
        line = text.count('\n', 0, offset) + 1
        self.found.append((line, offset, '%s:%d: %s (%s)' % (rel, line, target, reason)))

    def check_file(self, rel):
        path = os.path.join(self.root, rel)
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        links, undefined = links_of(text)
        self.found = []
        for offset, label in undefined:
            self.report(rel, text, offset, '[%s]' % label, 'no reference definition for this label')
        for offset, dest in links:
            self.check_link(rel, text, offset, dest)
        self.problems += [p for _, _, p in sorted(self.found)]

    def check_link(self, rel, text, offset, dest):
        target = dest[1:-1] if dest.startswith('<') and dest.endswith('>') else dest
        if SCHEME.match(target) or target.startswith('//'):
            return
        self.checked += 1
        if not target:
            self.report(rel, text, offset, '()', 'empty link')
            return
        path_part, _, anchor = target.partition('#')
        path_part = urllib.parse.unquote(path_part.split('?', 1)[0])
        anchor = urllib.parse.unquote(anchor)
        if not path_part:
            dest_path = os.path.join(self.root, rel)
        elif path_part.startswith('/'):
            dest_path = os.path.join(self.root, path_part.lstrip('/'))
        else:
            dest_path = os.path.join(self.root, os.path.dirname(rel), path_part)
        dest_path = os.path.normpath(dest_path)
        if not (dest_path + os.sep).startswith(self.root + os.sep):
            self.report(rel, text, offset, target, 'outside the repository')
            return
        if not os.path.exists(dest_path):
            self.report(rel, text, offset, target, 'no such file')
            return
        if path_part.endswith('/') and not os.path.isdir(dest_path):
            self.report(rel, text, offset, target, 'not a directory')
            return
        if '#' not in target or not dest_path.endswith('.md') or not os.path.isfile(dest_path):
            return
        if not anchor:
            self.report(rel, text, offset, target, 'empty anchor')
        elif anchor not in self.anchors(dest_path):
            where = 'this file' if not path_part else os.path.relpath(dest_path, self.root)
            self.report(rel, text, offset, target, 'no heading or <a id> "%s" in %s' % (anchor, where))


def run(root, out=sys.stdout, err=sys.stderr):
    files = markdown_files(root)
    if not files:
        print('FAIL: no Markdown file found under %s' % root, file=err)
        return 1
    c = Checker(root)
    for rel in files:
        c.check_file(rel)
    for p in c.problems:
        print(p, file=err)
    if c.problems:
        print('FAIL: %d broken links in %d Markdown files' % (len(c.problems), len(files)), file=err)
        return 1
    print('ok   %d relative links in %d Markdown files resolve' % (c.checked, len(files)), file=out)
    return 0


# ---- self-test -----------------------------------------------------------------

SELF_TEST_FILES = {
    'README.md': """# Title

See [the guide](docs/GUIDE.md), [a section](docs/GUIDE.md#second-part),
[the same, twice](docs/GUIDE.md#second-part-1), [odd](docs/GUIDE.md#bfscandump--bfloadchunk),
[explicit](docs/GUIDE.md#here), [local](#title), [dir](docs/), [root](/docs/GUIDE.md),
[a file](src/a.c#L3), [web](https://example.com/x.md#nope), [mail](mailto:a@b),
[ref][good] and [ref too][Good], ![image](docs/GUIDE.md "title"),
[spaced](<docs/GUIDE.md>), [encoded](docs/GUIDE.md#caf%C3%A9-menu).

Broken: [gone](docs/MISSING.md), [bad anchor](docs/GUIDE.md#third-part),
[bad local](#nothing-here), [missing ref][nodef],
[wrapped
anchor](docs/GUIDE.md#not-a-heading).

`[in code](docs/NOPE.md)` and ``[in `double` code](docs/NOPE.md)`` are code.
<!-- [in a comment](docs/NOPE.md) -->

```sh
[in a fence](docs/NOPE.md)
# a heading in a fence
```

[good]: docs/GUIDE.md#first-part
[bad]: docs/GUIDE.md#in-a-fence
""",
    'docs/GUIDE.md': """# Guide

## First part

## Second part

## Second part

## BF.SCANDUMP / BF.LOADCHUNK

### Café menu

<a id="here"></a>

Back to the [top](../README.md#title), [broken](../README.md#guide).

~~~
## Not a heading
~~~
""",
    'src/a.c': '/* a file */\n',
}

SELF_TEST_EXPECTED = [
    'README.md:10: docs/MISSING.md (no such file)',
    'README.md:10: docs/GUIDE.md#third-part (no heading or <a id> "third-part" in docs/GUIDE.md)',
    'README.md:11: #nothing-here (no heading or <a id> "nothing-here" in this file)',
    'README.md:11: [nodef] (no reference definition for this label)',
    'README.md:13: docs/GUIDE.md#not-a-heading (no heading or <a id> "not-a-heading" in docs/GUIDE.md)',
    'README.md:24: docs/GUIDE.md#in-a-fence (no heading or <a id> "in-a-fence" in docs/GUIDE.md)',
    'docs/GUIDE.md:15: ../README.md#guide (no heading or <a id> "guide" in README.md)',
]


def self_test():
    """Runs the checker over a small tree with known good and broken links:
    it must report exactly the broken ones, and pass once they are fixed."""
    with tempfile.TemporaryDirectory() as d:
        for rel, content in SELF_TEST_FILES.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), 'w', encoding='utf-8') as f:
                f.write(content)
        c = Checker(d)
        for rel in markdown_files(d):
            c.check_file(rel)
        ok = True
        if c.problems != SELF_TEST_EXPECTED:
            ok = False
            print('FAIL: the checker reported:', file=sys.stderr)
            for p in c.problems:
                print('  ' + p, file=sys.stderr)
            print('expected:', file=sys.stderr)
            for p in SELF_TEST_EXPECTED:
                print('  ' + p, file=sys.stderr)
        # The same tree with the broken links removed must pass.
        fixed = re.sub(r'\nBroken:.*?\n\n', '\n', SELF_TEST_FILES['README.md'], flags=re.S)
        with open(os.path.join(d, 'README.md'), 'w', encoding='utf-8') as f:
            f.write(fixed.replace('[bad]: docs/GUIDE.md#in-a-fence\n', ''))
        with open(os.path.join(d, 'docs/GUIDE.md'), 'w', encoding='utf-8') as f:
            f.write(SELF_TEST_FILES['docs/GUIDE.md'].replace(', [broken](../README.md#guide)', ''))
        with open(os.devnull, 'w') as devnull:
            if run(d, out=devnull, err=sys.stderr) != 0:
                ok = False
                print('FAIL: the fixed tree does not pass', file=sys.stderr)
            # An empty tree is a failure, not a pass.
            with tempfile.TemporaryDirectory() as empty:
                if run(empty, out=devnull, err=devnull) != 1:
                    ok = False
                    print('FAIL: a tree without Markdown files passes', file=sys.stderr)
    if ok:
        print('ok   the link checker finds the %d broken links of its fixture, and no other'
              % len(SELF_TEST_EXPECTED))
    return 0 if ok else 1


def main(argv):
    if len(argv) > 1 and argv[1] in ('-h', '--help'):
        print(__doc__.strip())
        return 0
    if len(argv) > 1 and argv[1] == '--self-test':
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    return run(root)


if __name__ == '__main__':
    sys.exit(main(sys.argv))

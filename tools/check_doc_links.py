#!/usr/bin/env python3
"""Checks that the documentation is self-contained: every relative link in README.md, docs/*.md and the other
Markdown files of the repository points at a file or folder that exists inside the repository, no link or text
points outside it (`../shared/...`, absolute paths, `file:` URLs), and README.md and docs/*.md do not cite a
contract that is not in the repository (`SPEC.md`, `SPEC §N`; the contract is docs/CONTRACT.md).

usage: check_doc_links.py [REPO_ROOT] | --self-test
Exit 0 when clean; 1 with one line per problem (FILE:LINE: message) otherwise. Web links (http, https, mailto)
are not fetched.
"""
import os
import re
import sys
import tempfile

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # [text](target)
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")  # [label]: target
HREF = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""")
OUTSIDE_TEXT = re.compile(r"\.\./shared\b|/work/shared\b")
SPEC_TEXT = re.compile(r"\bSPEC(?:\.md\b|\s*§)")
SKIP_DIRS = {".git", "node_modules", "__pycache__"}


def markdown_files(root):
    """README.md and docs/*.md first, then every other .md file outside build folders."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not (rel == "." and d.startswith("build")))
        out += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".md")]
    return out


def strict(root, path):
    """README.md and docs/*.md must not cite SPEC (the contract lives in docs/CONTRACT.md)."""
    rel = os.path.relpath(path, root)
    return rel == "README.md" or (rel.startswith("docs" + os.sep) and rel.endswith(".md"))


def targets(line):
    for rx in (LINK, REF_DEF, HREF):
        for m in rx.finditer(line):
            yield m.group(1)


def check_file(root, path):
    problems = []
    rel = os.path.relpath(path, root)
    root_real = os.path.realpath(root)
    in_fence = False
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        where = f"{rel}:{n}"
        if OUTSIDE_TEXT.search(line):
            problems.append(f"{where}: refers to a path outside the repository ({OUTSIDE_TEXT.search(line).group(0)})")
        if strict(root, path) and SPEC_TEXT.search(line):
            problems.append(f"{where}: cites \"{SPEC_TEXT.search(line).group(0)}\", which is not in the repository "
                            "(the contract is docs/CONTRACT.md)")
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in targets(line):
            if re.match(r"^(https?:|mailto:)", target) or target.startswith("#"):
                continue
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                problems.append(f"{where}: link {target}: only http(s), mailto and relative links are allowed")
                continue
            file_part = target.split("#", 1)[0].split("?", 1)[0]
            if not file_part:
                continue
            if file_part.startswith("/"):
                problems.append(f"{where}: link {target}: absolute path; use a path relative to {rel}")
                continue
            resolved = os.path.realpath(os.path.join(os.path.dirname(path), file_part))
            if os.path.commonpath([resolved, root_real]) != root_real:
                problems.append(f"{where}: link {target} leaves the repository")
            elif not os.path.exists(resolved):
                problems.append(f"{where}: link {target}: no such file in the repository")
    return problems


def check(root):
    problems = []
    for path in markdown_files(root):
        problems += check_file(root, path)
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "docs"))
        os.makedirs(os.path.join(tmp, "sub"))
        open(os.path.join(tmp, "sub", "a.md"), "w").write("[ok](../README.md) [web](https://example.org/x)\n")
        open(os.path.join(tmp, "docs", "CONTRACT.md"), "w").write("[back](../README.md#quick-start)\n")
        open(os.path.join(tmp, "README.md"), "w").write(
            "[c](docs/CONTRACT.md) [s](sub/) [in](#quick-start)\n"
            "```sh\ncat [x](../outside.md)\n```\n")
        assert check(tmp) == [], check(tmp)
        bad = {
            "[spec](../shared/SPEC.md)": ["outside the repository", "leaves the repository", "cites"],
            "[gone](docs/missing.md)": ["no such file"],
            "[up](../../etc/passwd)": ["leaves the repository"],
            "[abs](/etc/passwd)": ["absolute path"],
            "[f](file:///etc/passwd)": ["only http(s)"],
            "the contract is SPEC §4": ["cites"],
            "[r]: ../elsewhere.md": ["leaves the repository"],
            '<img src="../x.png">': ["leaves the repository"],
        }
        for text, expected in bad.items():
            open(os.path.join(tmp, "README.md"), "w").write(text + "\n")
            found = check(tmp)
            for e in expected:
                assert any(e in p for p in found), (text, e, found)
        open(os.path.join(tmp, "README.md"), "w").write("ok\n")
        open(os.path.join(tmp, "sub", "a.md"), "w").write("see SPEC §5 [x](nope.md)\n")  # SPEC text only strict
        found = check(tmp)
        assert len(found) == 1 and "no such file" in found[0], found
    print("check_doc_links self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} documentation link problem(s)", file=sys.stderr)
        return 1
    print(f"documentation links: {len(markdown_files(os.path.abspath(root)))} Markdown files checked, all inside "
          "the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())

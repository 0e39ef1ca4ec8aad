"""Runs the Python code of a documentation page and checks the output it prints.

Every ```python block of the page runs, in order, in one namespace (so a block may use what an
earlier one defined), with the working directory a fresh temporary folder. A block followed
directly by a ```text block must print exactly that text. Exit status 1 on the first mismatch
or exception, naming the block's line.

    python3 python/tests/check_docs.py docs/python.md README.md
"""

import contextlib
import io
import os
import re
import sys
import tempfile
import traceback


def blocks(text):
    """(language, first line number, body) of every fenced block."""
    out = []
    pattern = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
    for m in pattern.finditer(text):
        out.append((m.group(1), text.count("\n", 0, m.start()) + 1, m.group(2), m.start(), m.end()))
    return out


def check_page(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = blocks(text)
    namespace = {"__name__": "__docs__"}
    ran = 0
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        for k, (lang, line, body, _, end) in enumerate(found):
            if lang != "python":
                continue
            ran += 1
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(body, f"{path}:{line}", "exec"), namespace)
            except Exception:
                traceback.print_exc()
                print(f"{path}:{line}: the block raised")
                return 1
            following = found[k + 1] if k + 1 < len(found) else None
            if following and following[0] == "text" and text[end:following[3]].strip() == "":
                if out.getvalue() != following[2]:
                    print(f"{path}:{following[1]}: the block at line {line} prints\n{out.getvalue()}"
                          f"but the page says\n{following[2]}")
                    return 1
    if ran == 0:
        print(f"{path}: no python block")
        return 1
    print(f"{path}: {ran} python blocks ran, their output as printed")
    return 0


def main(paths):
    start = os.getcwd()
    for path in paths:
        status = check_page(os.path.abspath(os.path.join(start, path)))
        os.chdir(start)
        if status != 0:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

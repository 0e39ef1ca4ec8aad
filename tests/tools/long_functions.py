#!/usr/bin/env python3
"""Lists the functions of C++ sources longer than a limit (lines from the signature's first line
to the closing brace), with whether the comment above says why.

    long_functions.py [--limit 80] [--check] files...

A function is a brace block opened at the end of a line that looks like a signature (a ')' or
'const'/'noexcept'/'override' before the '{', no 'class'/'struct'/'namespace'/control keyword);
lambdas and blocks inside a function count toward it. --check exits 1 when a function above the
limit has no comment containing "Long:" in the lines above its signature."""
import re
import sys

CONTROL = re.compile(r'^\s*(if|else|for|while|switch|do|try|catch|case|default)\b|^\s*[}]')
TYPES = re.compile(r'\b(class|struct|namespace|enum|union)\b')
SIG_END = re.compile(r'(\)|\bconst|\bnoexcept|\boverride|\bmutable|->\s*[\w:<>,\s&*]+)\s*(requires\b.*)?\{\s*(//.*)?$')


def functions(lines):
    out = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        start = i
        if SIG_END.search(line) and not CONTROL.search(line) and not TYPES.search(line) \
                and not line.strip().startswith('//'):
            # the signature may start a few lines up
            while start > 0 and lines[start - 1].strip() and not lines[start - 1].strip().endswith((';', '{', '}', ':')) \
                    and not lines[start - 1].strip().startswith(('//', '#', 'template', 'public', 'private', 'protected')):
                start -= 1
        head = re.sub(r'\[\[[^\]]*\]\]', '', ' '.join(l.strip() for l in lines[start:i + 1])).split('(')[0]
        if start != i or SIG_END.search(line):
            if not SIG_END.search(line) or CONTROL.search(lines[start]) or '=' in head or '[' in head or 'return' in head:
                i += 1
                continue
            depth = 0
            j = i
            while j < n:
                code = re.sub(r'//.*', '', lines[j])
                code = re.sub(r"'(\\.|[^'])'", "''", code)
                code = re.sub(r'"(\\.|[^"])*"', '""', code)
                depth += code.count('{') - code.count('}')
                if depth <= 0:
                    break
                j += 1
            name = re.search(r'([~\w:]+(<[^()]*>)?)\s*\(', ' '.join(l.strip() for l in lines[start:i + 1]))
            out.append((start, j, name.group(1) if name else lines[i].strip()))
            i = j + 1
            continue
        i += 1
    return out


def main(argv):
    limit = 80
    check = False
    files = []
    k = 0
    while k < len(argv):
        if argv[k] == '--limit':
            limit = int(argv[k + 1])
            k += 2
            continue
        if argv[k] == '--check':
            check = True
        else:
            files.append(argv[k])
        k += 1
    unexplained = 0
    for path in files:
        with open(path, encoding='utf-8') as f:
            lines = f.read().split('\n')
        for start, end, name in functions(lines):
            length = end - start + 1
            if length <= limit:
                continue
            above = []
            k = start - 1
            while k >= 0 and (lines[k].strip().startswith(('//', 'template', '[[')) or lines[k].strip() == ''):
                if lines[k].strip().startswith('//'):
                    above.append(lines[k])
                if lines[k].strip() == '' and above:
                    break
                k -= 1
            explained = any('Long:' in a for a in above)
            if not explained:
                unexplained += 1
            print(f'{path}:{start + 1}: {name}: {length} lines{"" if explained else " (no comment saying why)"}')
    return 1 if check and unexplained else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

# Copies the named kernels of a PTX module into a module of their own, each entry renamed
# `<name>_cuda`, so that `host --cuda-c DIR` launches it as the twin of the current Rust kernel:
# usage: strip_entries.py IN.ptx OUT.ptx name1,name2,...
import re, sys
src, dst, names = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
lines = open(src).read().split('\n')
out = []
i = 0
# header up to first .func/.entry
while i < len(lines) and not re.match(r'^\.visible \.(func|entry)', lines[i]):
    out.append(lines[i]); i += 1
while i < len(lines):
    m = re.match(r'^\.visible \.entry (\w+)\(', lines[i])
    j = i + 1
    while j < len(lines) and not lines[j].startswith('}'):
        j += 1
    block = lines[i:j+1]
    if m and m.group(1) in names:
        block[0] = block[0].replace(m.group(1) + '(', m.group(1) + '_cuda(')
        out += block + ['']
    i = j + 1
    while i < len(lines) and not re.match(r'^\.visible \.(func|entry)', lines[i]):
        i += 1
open(dst, 'w').write('\n'.join(out))

"""States, groups and nodes per DFA build from stats.sh's output (OFB_DFA_STATS=1): python3 states.py stats1.txt"""
import re, sys
name = None; st = 0
for l in open(sys.argv[1]):
    if l.startswith('== '):
        name = ' '.join(l.split()[1:]); st = 0
    m = re.match(r'dfa:  layer \d+ \(byte \d+\): (\d+) states', l)
    if m:
        st += int(m.group(1))
    m = re.match(r'dfa: (\d+) rules, (\d+) groups, (\d+) nodes, (\d+) bytes', l)
    if m:
        n = int(m.group(1))
        print(f"{name:22} {n:7} rules {m.group(2)} groups {st:8} states ({st / n:5.2f}/rule) "
              f"{int(m.group(3)) / n:5.2f} nodes/rule {int(m.group(4)) / n:6.1f} B/rule (dfa.h)")
        st = 0

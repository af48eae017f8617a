"""Small stdlib-only programs that run *on a lab host* (sent over SSH as ``python3 -c``), so a
host needs nothing of ofbench installed for the lab to reach, check and clean it.

* ``FACTS``: what the host is (boot id, cores, free hugepages and the hugetlbfs mount, the
  ofbench tree's state) as one JSON line.
* ``CLEAN``: remove what a run left on the host: kill its recorded processes (pid + kernel
  start time, so a recycled pid is never hit), its DPDK runtime folders and hugepage files
  (prefix ``ofb<short>``) and its state folder. argv: state_dir short [huge_dir] [dpdk_dir]
* ``RELAY``: join stdin/stdout to a unix socket on the host (softgen's control socket, the
  switch's stats socket) so the controlling machine talks to it through an SSH channel.
* ``WORKDIR``: the state of the host's ``workdir`` (exists, empty, carries ofbench's marker)
  before rsync --delete goes there, and the marker written into an empty or missing one.
"""
from __future__ import annotations

FACTS = r"""
import json, os
def rd(p, d=None):
    try:
        return open(p).read().strip()
    except OSError:
        return d
huge = "/dev/hugepages-ofbench"
print(json.dumps({
    "boot_id": rd("/proc/sys/kernel/random/boot_id", "?"),
    "hostname": os.uname().nodename,
    "cpus": sorted(os.sched_getaffinity(0)),
    "free_hugepages": int(rd("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "0")),
    "huge_mounted": os.path.ismount(huge),
    "python": os.sys.version.split()[0],
}))
"""

CLEAN = r"""
import glob, json, os, shutil, signal, sys
state, short = sys.argv[1], sys.argv[2]
huge = sys.argv[3] if len(sys.argv) > 3 else "/dev/hugepages-ofbench"
dpdk = sys.argv[4] if len(sys.argv) > 4 else "/var/run/dpdk"
def start_time(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if f[0] in ("Z", "X") else int(f[19])
done = []
try:
    lines = open(os.path.join(state, "pids.jsonl")).read().splitlines()
except OSError:
    lines = []
for line in lines:
    try:
        rec = json.loads(line)
    except ValueError:
        continue
    if rec.get("start_time") is None or start_time(rec["pid"]) != rec["start_time"]:
        continue
    for kill in (os.killpg, os.kill):
        try:
            kill(rec["pid"], signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    done.append(f"process {rec.get('name')}({rec['pid']})")
for d in glob.glob(os.path.join(dpdk, f"ofb{short}*")):
    shutil.rmtree(d, ignore_errors=True)
    done.append(f"DPDK runtime {os.path.basename(d)}")
for f in glob.glob(os.path.join(huge, f"ofb{short}*")):
    try:
        os.unlink(f)
        done.append(f"hugepage file {os.path.basename(f)}")
    except OSError:
        pass
shutil.rmtree(state, ignore_errors=True)
print(json.dumps(done))
"""

STALE = r"""
import glob, json, os, re, sys
root, role = sys.argv[1], sys.argv[2]
out = []
for owner in glob.glob(os.path.join(root, "run-*", role, "owner.json")):
    if not re.fullmatch(r"run-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}",
                        os.path.basename(os.path.dirname(os.path.dirname(owner))), re.ASCII):
        continue
    try:
        rec = json.load(open(owner))
        if not isinstance(rec, dict) or type(rec.get("pid")) is not int:
            raise ValueError("not an owner record")
        out.append({"dir": os.path.dirname(owner), **rec})
    except (OSError, ValueError):
        # written atomically by us, so a record that does not read is not ours to judge
        out.append({"dir": os.path.dirname(owner), "unreadable": True})
print(json.dumps(out))
"""

RELAY = r"""
import os, selectors, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as e:
    sys.stderr.write(f"relay: {sys.argv[1]}: {e}\n")
    sys.exit(3)
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ)
sel.register(s, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        if key.fileobj == 0:
            data = os.read(0, 65536)
            if not data:
                s.shutdown(socket.SHUT_WR)
                sel.unregister(0)
                continue
            s.sendall(data)
        else:
            data = s.recv(65536)
            if not data:
                sys.exit(0)
            os.write(1, data)
"""

# The state of a host's workdir before rsync --delete syncs into it, or (argv "mark") the marker
# written into an empty or missing one: argv: workdir marker_name [mark|adopt marker_text].
# drivers.lab.remote.workdir_action decides from the state; the marker is created with O_EXCL
# and, for "mark", only while the folder is still empty, so nothing decides twice ("adopt":
# an emulated lab's own cache tree synced before the marker existed).
WORKDIR = r"""
import json, os, sys
wd, name = sys.argv[1], sys.argv[2]
marker = os.path.join(wd, name)
def state():
    if os.path.lexists(wd) and not os.path.isdir(wd):
        return {"exists": True, "is_dir": False, "marker": False, "entries": []}
    if not os.path.isdir(wd):
        return {"exists": False, "is_dir": False, "marker": False, "entries": []}
    entries = sorted(os.listdir(wd))
    tree = (os.path.isfile(os.path.join(wd, "harness", "plugin.py"))
            and os.path.isdir(os.path.join(wd, ".venv")))
    return {"exists": True, "is_dir": True, "marker": os.path.isfile(marker),
            "entries": entries[:8], "count": len(entries), "ofbench_tree": tree}
if len(sys.argv) > 3 and sys.argv[3] in ("mark", "adopt"):
    os.makedirs(wd, exist_ok=True)
    if sys.argv[3] == "mark" and os.listdir(wd):
        sys.exit("workdir is no longer empty")
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, sys.argv[4].encode())
    os.close(fd)
print(json.dumps(state()))
"""

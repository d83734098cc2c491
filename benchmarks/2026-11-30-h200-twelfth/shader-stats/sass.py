# Extracts the SASS of each pipeline cache `shader-stats --cache` wrote: the NVIDIA blob
# is a zstd frame holding an "NVDANVVM" container whose entry at byte 76 gives the code's
# size and offset (8 bytes of prefix before the first instruction), then nvdisasm from
# the Triton wheel disassembles it for SM90. `zstd` is taken from a `bin/` folder beside
# this script where there is one (the GPU machine has none on its PATH; the calls carried
# a copy), else from the PATH.
import os, shutil, sys, struct, subprocess, glob, re, collections
d = sys.argv[1]
import triton
tb = os.path.join(os.path.dirname(triton.__file__), 'backends', 'nvidia', 'bin')
beside = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bin', 'zstd')
zstd = beside if os.path.exists(beside) else shutil.which('zstd') or 'zstd'
for f in sorted(glob.glob(os.path.join(d, '*.cache'))):
    b = open(f, 'rb').read()
    z = b.find(b'\x28\xb5\x2f\xfd')
    open('/tmp/x.zst', 'wb').write(b[z:])
    subprocess.run([zstd, '-q', '-d', '-f', '/tmp/x.zst', '-o', '/tmp/x.bin'], check=True)
    c = open('/tmp/x.bin', 'rb').read()
    size, off = struct.unpack_from('<II', c, 76)
    raw = f[:-6] + '.sass.bin'
    open(raw, 'wb').write(c[off + 8:off + size] + b'\0' * 8)
    out = f[:-6] + '.sass'
    r = subprocess.run([os.path.join(tb, 'nvdisasm'), '-b', 'SM90', raw], capture_output=True, text=True)
    open(out, 'w').write(r.stdout + r.stderr)
    ops = collections.Counter()
    for l in r.stdout.splitlines():
        m = re.search(r'/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z0-9_]+)', l)
        if m: ops[m.group(3)] += 1
    print(os.path.basename(f), 'instructions', sum(ops.values()), dict(ops.most_common(14)))

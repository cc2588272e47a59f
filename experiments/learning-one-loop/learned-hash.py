import sys, json, struct, hashlib, glob, os
# Hashes what a checkpoint learned: safetensors tensor bytes (not the header's metadata), weight lines of .txt, AdamW states.
for d in sys.argv[1:]:
    h = hashlib.sha256()
    files = sorted(f for f in glob.glob(os.path.join(d, 'ckpt', 'last.*')) if not f.endswith('.json'))
    for f in files:
        b = open(f, 'rb').read()
        if f.endswith('.safetensors'):
            n = struct.unpack('<Q', b[:8])[0]
            header = json.loads(b[8:8 + n])
            for k in sorted(x for x in header if x != '__metadata__'):
                s, e = header[k]['data_offsets']
                h.update(k.encode()); h.update(b[8 + n + s:8 + n + e])
        elif f.endswith('.txt'):
            h.update(b''.join(l for l in b.splitlines(True) if not l.startswith(b'#')))
        else:
            h.update(b)
    print(os.path.basename(d), [os.path.basename(f) for f in files], h.hexdigest()[:16])

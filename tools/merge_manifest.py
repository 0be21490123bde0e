#!/usr/bin/env python3
"""Resolves a merge conflict in prebuilt/manifest.json entry by entry: for each binary, the side that changed it
since the merge base wins (both changed: ours, then `deno task verify-prebuilt` says whether it holds); entries
sorted by path as tools/build.ts writes them. Run during a conflicted merge, from the repository root:

  python3 tools/merge_manifest.py && git add prebuilt/manifest.json && deno task verify-prebuilt
"""
import json
import subprocess


def stage(n):
    out = subprocess.run(["git", "show", f":{n}:prebuilt/manifest.json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


base, ours, theirs = stage(1), stage(2), stage(3)
b, o, t = base["binaries"], ours["binaries"], theirs["binaries"]
merged = {}
for k in sorted(set(o) | set(t)):
    if k in o and k in t:
        merged[k] = t[k] if o[k] == b.get(k) else o[k]
    elif k in o:
        if k in b and o[k] == b[k]:
            continue  # removed by theirs
        merged[k] = o[k]
    else:
        if k in b and t[k] == b[k]:
            continue  # removed by ours
        merged[k] = t[k]
ours["binaries"] = merged
with open("prebuilt/manifest.json", "w") as f:
    f.write(json.dumps(ours, indent=2) + "\n")
print(f"{len(merged)} binaries")

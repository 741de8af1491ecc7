#!/usr/bin/python3
"""tools/compare_outputs.py EXPECTED OUTPUT - check a `bertc run` output file
against a PyTorch reference with the SPEC section 6 tolerance:
max|x - ref| <= 1e-4 * max|ref| + 1e-6 per tensor, integer tensors exactly.
Prints the worst tensor and exits 1 if any tensor fails or is missing."""
import sys

import st

want, got = st.load(sys.argv[1]), st.load(sys.argv[2])
failed, worst = [], (0.0, None)
for name, ref in want.items():
    if name not in got:
        failed.append(name + " (missing)")
        continue
    x = got[name]
    if not ref.dtype.is_floating_point:
        if not (x.long() == ref.long()).all():
            failed.append(name)
        continue
    err = (x.double() - ref.double()).abs().max().item() if ref.numel() else 0.0
    allowed = 1e-4 * (ref.double().abs().max().item() if ref.numel() else 0.0) + 1e-6
    worst = max(worst, (err / allowed, name))
    if not err <= allowed:
        failed.append("%s (error %.3g, allowed %.3g)" % (name, err, allowed))
print("%d tensors, worst %s at %.3f of the tolerance%s" % (
    len(want), worst[1], worst[0], "" if not failed else "; FAILED: " + ", ".join(failed)))
sys.exit(1 if failed else 0)

import sys, xml.etree.ElementTree as ET
def load(p):
    d = {}
    for tc in ET.parse(p).getroot().iter("testcase"):
        k = (tc.get("classname") or "") + "::" + (tc.get("name") or "")
        st = "skipped" if tc.find("skipped") is not None else ("failed" if (tc.find("failure") is not None or tc.find("error") is not None) else "passed")
        d[k] = (float(tc.get("time")), st)
    return d
idle, loaded = load(sys.argv[1]), load(sys.argv[2])
ti = sum(v[0] for v in idle.values()); tl = sum(v[0] for v in loaded.values())
print(f"tests idle {len(idle)} loaded {len(loaded)}; summed test time idle {ti:.0f}s loaded {tl:.0f}s ratio {tl/ti:.2f}")
print("statuses loaded:", {s: sum(1 for v in loaded.values() if v[1] == s) for s in ("passed","failed","skipped")})
rows = []
for k, (t, s) in loaded.items():
    if k in idle:
        ti_ = idle[k][0]
        rows.append((t / max(ti_, 0.05), t, ti_, k))
rows.sort(reverse=True)
print("slowest ratios (idle time floored at 0.05 s):")
for r in rows[:15]:
    print(f"  {r[0]:6.2f}x  {r[1]:7.2f}s vs {r[2]:6.2f}s  {r[3][:110]}")
big = [r for r in rows if r[0] > 10 and r[1] > 1.0]
print("over 10x and over 1 s:", len(big))
over10 = [r for r in rows if r[0] > 10]
print("over 10x at any duration:", len(over10), [f"{r[3][-60:]} {r[1]:.2f}s/{r[2]:.3f}s" for r in over10[:8]])

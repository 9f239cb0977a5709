import json, sys
def table(path, modes):
    d = json.load(open(path)); m = d["median_ms"]
    widths = list(m["fast"])
    head = "| n | " + " | ".join(f"{x} ms" for x in modes) + " | " + " | ".join(f"{x} / fast" for x in modes if x != "fast") + " |"
    out = [head, "|" + "---|" * (1 + len(modes) * 2 - 1)]
    for w in widths:
        f = m["fast"][w]
        out.append(f"| {w} | " + " | ".join(f"{m[x][w]:.1f}" for x in modes) + " | " + " | ".join(f"{m[x][w]/f:.2f}" for x in modes if x != "fast") + " |")
    return "\n".join(out)
print(table(sys.argv[1], sys.argv[2].split(",")))

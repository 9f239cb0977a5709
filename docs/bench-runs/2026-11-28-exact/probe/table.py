import json, os
def table(rows, widths):
    out = ["| setting | " + " | ".join(f"n = {n}" for n in widths) + " | max abs diff |",
           "|---|" + "---|" * (len(widths) + 1)]
    for key, label in rows:
        p = f"/work/runs/probe/{key}.json"
        if not os.path.exists(p): continue
        r = json.load(open(p))["report"]
        w = {x["width"]: x for x in r["widths"]}
        out.append(f"| {label} | " + " | ".join(f"{w[n]['bit_equal']}/{w[n]['rows']}" for n in widths) + f" | {r['max_abs_diff']:.2f} |")
    return "\n".join(out)
print(table([("fast-fa-off", "fast, FlashAttention off (the issue's setup)"),
             ("fast", "fast (llama.cpp's defaults: FlashAttention auto, repacked weights)"),
             ("exact", "**exact**"), ("exact-companions3", "**exact**, 3 companion sequences in every pass")],
            [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32]))
print()
print(table([("fast-long", "fast"), ("exact-long", "**exact**")], [1, 2, 4, 8, 16, 32, 64]))

#!/usr/bin/env python3
# Generates the single-call tasks scripts/bench scores, in both input formats from one
# generator, so `plangate score` and the seed's Python gate decide the very same tasks.
"""gen_tasks.py --format plangate|seed --count N [--seed S] [--catalog-out FILE]

Writes N tasks (JSONL) to stdout. Each task is one tool of the seed world, called once
per sample, 5 to 10 samples, with the outcomes an agent batch has: agreeing samples,
one odd sample out, spelling noise the catalog's hints remove (SKU case, path forms),
fabricated ids that do not resolve, and a drifting tool. Results are real records from
examples/seed-world/data, so payload sizes are realistic.

--catalog-out writes the seed-world catalog with `verified` recorded (what `plangate
score` judges by): every declared-deterministic tool verified except read_config.
"""
import argparse
import json
import os
import random
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WORLD = os.path.join(ROOT, "examples", "seed-world")
UNVERIFIED = {"read_config"}


def load(name, key):
    with open(os.path.join(WORLD, "data", name)) as f:
        return json.load(f)[key]


def write_catalog(path):
    with open(os.path.join(WORLD, "catalog.json")) as f:
        cat = json.load(f)
    for t in cat["tools"]:
        # score never loads modules; their paths are relative to the original file.
        t.pop("module", None)
        if t["deterministic"]:
            t["verified"] = t["name"] not in UNVERIFIED
    with open(path, "w") as f:
        json.dump(cat, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", choices=["plangate", "seed"], required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--catalog-out")
    a = ap.parse_args()
    if a.catalog_out:
        write_catalog(a.catalog_out)

    users = {u["id"]: u for u in load("users.json", "users")}
    orders = {o["id"]: o for o in load("orders.json", "orders")}
    products = {p["sku"]: p for p in load("products.json", "products")}
    with open(os.path.join(WORLD, "data", "rates.json")) as f:
        rates = json.load(f)

    def not_found(what):
        return {"error": {"kind": "not_found", "message": f"no {what}"}}

    def user_call(rng, good):
        uid = good if rng.random() < 0.9 else rng.choice(list(users))
        return {"user_id": uid}, users.get(uid)

    def fake_user(rng, _good):
        uid = "u_%04d" % rng.randrange(37, 9999)
        return {"user_id": uid}, not_found(f"user with id {uid!r}")

    def order_call(rng, good):
        oid = good if rng.random() < 0.9 else rng.choice(list(orders))
        return {"order_id": oid}, orders[oid]

    def product_call(rng, good):
        # Case and padding noise the casefold/trim hints remove; the seed sees distinct args.
        sku = rng.choice([good, good.lower(), " " + good, good.title()])
        fields = ["name", "price_cents", "currency"]
        rng.shuffle(fields)
        p = products[good]
        return {"sku": sku, "fields": fields}, {k: p[k] for k in sorted(fields)}

    def currency_call(rng, good):
        amount, to = good
        rate = rates["rates"][to]
        args = {"amount": amount, "from": rng.choice(["USD", "usd"]), "to": to}
        return args, {"amount": amount, "from": "USD", "to": to, "rate": rate,
                      "converted": round(amount * rate, 2), "as_of": rates["as_of"]}

    def read_call(rng, good):
        path = rng.choice([good, good.replace("/world/", ""), good.replace("/docs/", "/docs/./")])
        body = "Refunds are issued within 30 days of purchase. " * 6
        return {"path": path}, {"path": good, "size": len(body), "truncated": False, "content": body}

    def search_call(rng, good):
        # The drifting tool: a segment lands mid-batch and the hits move.
        n = 3 + (rng.random() < 0.4)
        hits = [{"doc": f"d{j}", "title": f"Refund policy {j}", "score": round(1 / (j + 1), 3),
                 "segment": f"seg-{j % n}"} for j in range(5)]
        return {"query": good, "limit": 5}, {"query": good, "segments": n, "total_hits": 5 * n, "hits": hits}

    def config_call(rng, good):
        return {"key": good}, {"key": good, "value": True, "version": 7}

    def time_call(rng, _good):
        t = 1790000000 + rng.randrange(1000)
        return {"utc_offset_minutes": 0}, {"unix": t, "unix_ms": t * 1000, "utc_offset_minutes": 0,
                                           "rfc3339": "2026-09-21T12:00:00Z"}

    kinds = [
        ("get_user", user_call, lambda r: r.choice(list(users)), 30),
        ("get_user", fake_user, lambda r: None, 10),
        ("get_order", order_call, lambda r: r.choice(list(orders)), 15),
        ("lookup_product", product_call, lambda r: r.choice(list(products)), 15),
        ("convert_currency", currency_call,
         lambda r: (round(r.uniform(1, 500), 2), r.choice(["EUR", "GBP", "JPY", "CHF"])), 10),
        ("read_file", read_call, lambda r: r.choice(["/world/files/docs/refund-policy.md",
                                                     "/world/files/docs/onboarding.md"]), 8),
        ("search_index", search_call, lambda r: r.choice(["refund policy", "onboarding"]), 6),
        ("read_config", config_call, lambda r: r.choice(["features.beta", "limits.max_items"]), 3),
        ("get_current_time", time_call, lambda r: None, 3),
    ]
    weights = [k[3] for k in kinds]
    rng = random.Random(a.seed)
    out = sys.stdout
    dumps = json.dumps
    for i in range(a.count):
        name, call, pick, _ = rng.choices(kinds, weights)[0]
        good = pick(rng)
        n = 5 + i % 6
        pairs = [call(rng, good) for _ in range(n)]
        pairs = [(args, res if res is not None else not_found("user")) for args, res in pairs]
        label = "hallucinated" if call is fake_user else "correct"
        if a.format == "plangate":
            samples = []
            for args, res in pairs:
                c = {"tool": name, "arguments": args}
                if isinstance(res, dict) and set(res) == {"error"}:
                    c["error"] = res["error"]
                else:
                    c["result"] = res
                samples.append({"calls": [c]})
            out.write(dumps({"task_id": f"t-{i}", "samples": samples, "label": label}))
        else:
            det = name != "get_current_time"
            tool = {"name": name, "deterministic": det, "verified": det and name not in UNVERIFIED}
            out.write(dumps({"tool": tool, "samples": [[args, res] for args, res in pairs],
                             "raise_unverified": True}))
        out.write("\n")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(0)

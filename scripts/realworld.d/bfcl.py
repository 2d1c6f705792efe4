# Turns BFCL's question and answer files into plangate inputs for scripts/realworld: the
# four catalog dialects (BFCL's own converter reproduced, without importing bfcl_eval) and
# labelled tasks in native, OpenAI and Anthropic shapes.
"""BFCL entries as plangate catalogs and tasks.

An entry is one BFCL question with its function docs and its ground truth: a list of
calls, each `{fn_name: {param: [acceptable values...]}}`, where `""` means the
parameter may be left out. Everything random here draws from a `random.Random` seeded
with the run's seed and the entry id, so an entry gives the same tasks whatever else
is generated beside it.
"""
import copy
import json
import os
import random
import re

CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple"]
# The categories whose ground truth is several calls made together in one turn.
PARALLEL = {"parallel", "parallel_multiple"}
# plangate's own fields, declared the documented way in every shape.
X_PLANGATE = {"deterministic": True, "verified": True}
DIALECTS = ["bfcl", "openai_responses", "anthropic", "anthropic_wrapped"]
SHAPES = ["native", "openai", "anthropic"]
RESULT = {"ok": True}


# ---- reading -------------------------------------------------------------------------

def load(data_dir, categories=CATEGORIES):
    """Every entry of the categories, in file order, with its ground truth joined in."""
    entries = []
    for cat in categories:
        questions = _jsonl(os.path.join(data_dir, f"BFCL_v4_{cat}.json"))
        answers = {a["id"]: a for a in _jsonl(os.path.join(data_dir, "possible_answer", f"BFCL_v4_{cat}.json"))}
        for q in questions:
            entries.append({
                "id": q["id"],
                "category": cat,
                "question": q["question"],
                "function": q["function"],
                "ground_truth": answers[q["id"]]["ground_truth"],
            })
    return entries


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def user_text(entry):
    """The question as the user asked it (BFCL's entries here are one user message)."""
    return "\n".join(m["content"] for turn in entry["question"] for m in turn if m["role"] == "user")


# ---- catalogs: BFCL's converter, reproduced ------------------------------------------
# From bfcl_eval/constants/type_mappings.py and bfcl_eval/model_handler/utils.py
# (`GORILLA_TO_OPENAPI`, `_cast_to_openai_type`, `convert_to_tool`).

GORILLA_TO_OPENAPI = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "dict": "object", "object": "object", "tuple": "array", "any": "string",
    "byte": "integer", "short": "integer", "long": "integer", "double": "number",
    "char": "string", "ArrayList": "array", "Array": "array", "HashMap": "object",
    "Hashtable": "object", "Queue": "array", "Stack": "array", "Any": "string",
    "String": "string", "Bigint": "integer",
}


class ConverterError(Exception):
    """Where BFCL's own converter would raise (a KeyError there)."""


def _mapped(t):
    if t not in GORILLA_TO_OPENAPI:
        raise ConverterError(f"item type {t!r} is not in GORILLA_TO_OPENAPI")
    return GORILLA_TO_OPENAPI[t]


def _cast_to_openai_type(properties):
    """BFCL's `_cast_to_openai_type` with GORILLA_TO_OPENAPI, step for step: a missing
    type becomes "string", an unknown one "string", `float` becomes "number" with
    `"format": "float"` and a sentence added to its description; nested properties and
    items are mapped one or two levels deep, as BFCL does."""
    for key, value in properties.items():
        if "type" not in value:
            properties[key]["type"] = "string"
        else:
            var_type = value["type"]
            if var_type == "float":
                properties[key]["format"] = "float"
                if "description" not in properties[key]:
                    raise ConverterError(f"float parameter {key!r} has no description to append to")
                properties[key]["description"] += " This is a float type value."
            properties[key]["type"] = GORILLA_TO_OPENAPI.get(var_type, "string")
        if properties[key]["type"] in ("array", "object"):
            if "properties" in properties[key]:
                properties[key]["properties"] = _cast_to_openai_type(properties[key]["properties"])
            elif "items" in properties[key]:
                items = properties[key]["items"]
                if "type" not in items:
                    raise ConverterError(f"items of {key!r} have no type")
                items["type"] = _mapped(items["type"])
                if items["type"] == "array" and "items" in items:
                    if "type" not in items["items"]:
                        raise ConverterError(f"items of items of {key!r} have no type")
                    items["items"]["type"] = _mapped(items["items"]["type"])
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_to_openai_type(items["properties"])
    return properties


def convert_to_tool(functions, style):
    """BFCL's `convert_to_tool` for ModelStyle.OPENAI_RESPONSES ("openai_responses") and
    ModelStyle.ANTHROPIC ("anthropic"): `.` in names becomes `_`, the top-level schema
    type becomes "object", types are mapped, Anthropic moves `parameters` to
    `input_schema` (and folds a `response` field into the description), Responses adds
    `"type": "function"` last."""
    functions = copy.deepcopy(functions)
    tools = []
    for item in functions:
        if "." in item["name"]:
            item["name"] = re.sub(r"\.", "_", item["name"])
        item["parameters"]["type"] = "object"
        item["parameters"]["properties"] = _cast_to_openai_type(item["parameters"]["properties"])
        if style == "anthropic":
            item["input_schema"] = item["parameters"]
            del item["parameters"]
            if "response" in item:
                item["description"] += f" The response field has the following schema: {json.dumps(item['response'])}"
                del item["response"]
        elif style == "openai_responses":
            item["type"] = "function"
        else:
            raise ValueError(style)
        tools.append(item)
    return tools


def _declared(tools):
    return [dict(t, **{"x-plangate": dict(X_PLANGATE)}) for t in tools]


def catalogs(entry):
    """The entry's catalog in each dialect, or a ConverterError's text where BFCL's
    converter itself would fail."""
    out = {"bfcl": _declared(copy.deepcopy(entry["function"]))}
    for dialect, style in (("openai_responses", "openai_responses"), ("anthropic", "anthropic")):
        try:
            out[dialect] = _declared(convert_to_tool(entry["function"], style))
        except ConverterError as e:
            out[dialect] = {"converter_error": str(e)}
    a = out["anthropic"]
    out["anthropic_wrapped"] = {"tools": a} if isinstance(a, list) else a
    return out


def dialect_name(name, dialect):
    """A BFCL tool name as a dialect's catalog spells it."""
    return name if dialect == "bfcl" else re.sub(r"\.", "_", name)


# ---- tasks ---------------------------------------------------------------------------

def _docs(entry):
    return {f["name"]: f for f in entry["function"]}


def _allowed(values, required, declared):
    """The acceptable values BFCL's AST checker (ast_checker.py) really accepts: it
    refuses a missing required parameter (so `""` is dropped for one), and any
    parameter the function does not declare (so only leaving it out passes)."""
    if not declared:
        return [""] if "" in values else list(values)
    if required:
        kept = [v for v in values if v != ""]
        return kept or list(values)
    return list(values)


def _expand(rng, schema, value):
    """A dict answer is itself `{key: [acceptable values...]}` (dict_checker), and a list
    of dicts is a list of such: pick one value per key, `""` leaving the key out."""
    schema = schema or {}
    t = schema.get("type")
    if isinstance(value, dict) and t in ("dict", "object"):
        out = {}
        for k, alts in value.items():
            if not isinstance(alts, list) or not alts:
                out[k] = alts
                continue
            choice = rng.choice(alts)
            if choice == "":
                continue
            out[k] = _expand(rng, (schema.get("properties") or {}).get(k), choice)
        return out
    items = schema.get("items") or {}
    if isinstance(value, list) and t in ("array", "tuple") and items.get("type") in ("dict", "object") \
            and all(isinstance(x, dict) for x in value):
        return [_expand(rng, items, x) for x in value]
    return value


def correct_calls(rng, entry):
    """One sample's calls in ground-truth order, `(name, arguments)`, each parameter one
    of BFCL's acceptable values at random."""
    docs = _docs(entry)
    calls = []
    for gt in entry["ground_truth"]:
        (name, params), = gt.items()
        schema = docs[name]["parameters"]
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        args = {}
        for p, values in params.items():
            v = rng.choice(_allowed(values, p in required, p in props))
            if v == "":
                continue
            args[p] = _expand(rng, props.get(p), v)
        calls.append((name, args))
    return calls


# Types whose invented values can differ in every sample and keep the JSON type.
_SCALAR = {"string", "any", "char", "String", "integer", "long", "short", "byte", "float", "number", "double"}
_COMPOSITE = {"array", "tuple", "list", "dict", "object"}
_WORDS = """amber harbor lantern cobalt juniper meadow quartz saffron tundra willow falcon
granite hollow ivory jasper kestrel linden marble nectar orchid pepper raven sable thistle
umber velvet walnut yarrow zephyr beacon cinder dune ember fjord glade heron isle kelp
lagoon mesa nimbus opal prairie quill ridge summit timber vale""".split()


def fabrication_target(rng, entry):
    """(call index, parameter) to fabricate: a required parameter of a scalar type
    without an enum if there is one, else an array or dict; None when every required
    parameter is a boolean or an enum (no invented value could differ in N >= 6 samples
    and still be of its type)."""
    docs = _docs(entry)
    tiers = {0: [], 1: []}
    for i, gt in enumerate(entry["ground_truth"]):
        (name, params), = gt.items()
        schema = docs[name]["parameters"]
        props = schema.get("properties", {})
        for p in schema.get("required", []):
            s = props.get(p)
            if p not in params or s is None or "enum" in s:
                continue
            if s.get("type") in _SCALAR:
                tiers[0].append((i, p))
            elif s.get("type") in _COMPOSITE:
                tiers[1].append((i, p))
    for tier in (0, 1):
        if tiers[tier]:
            return rng.choice(tiers[tier])
    return None


def _numbers(values):
    out = []
    for v in values:
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out.append(abs(v))
        elif isinstance(v, list):
            out.extend(_numbers(v))
    return out


def _json_type(alternatives):
    """The BFCL type of an answer's first alternative that is not `""`."""
    v = next((x for x in (alternatives if isinstance(alternatives, list) else [alternatives]) if x != ""), "")
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "float"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "dict"
    return "string"


def _invent_once(rng, schema, known):
    t = (schema or {}).get("type")
    if t in ("integer", "long", "short", "byte"):
        top = int(max(_numbers(known) + [1]))
        return rng.randint(top * 10 + 1000, top * 10 + 1_000_000)
    if t in ("float", "number", "double"):
        top = max(_numbers(known) + [1.0])
        v = round(rng.uniform(top * 10 + 1000, top * 10 + 1_000_000), 2)
        return v if v != int(v) else v + 0.5
    if t in ("array", "tuple", "list"):
        item = (schema or {}).get("items") or {"type": "string"}
        return [_invent_once(rng, item, []) for _ in range(rng.randint(1, 3))]
    if t in ("dict", "object"):
        props = (schema or {}).get("properties")
        if props:
            return {k: _invent_once(rng, s, []) for k, s in props.items()}
        # No declared keys: the answer's own keys (`{key: [alternatives]}`), each with
        # an invented value of its answer's type.
        answer = next((v for v in known if isinstance(v, dict) and v), None)
        if answer:
            return {k: _invent_once(rng, {"type": _json_type(alts)}, alts if isinstance(alts, list) else [alts])
                    for k, alts in answer.items()}
        return {rng.choice(_WORDS): _invent_once(rng, {"type": "string"}, [])}
    if t in ("boolean", "bool"):
        return rng.choice([True, False])
    # A string: an acceptable value with a fresh tail ("Taylor Swiftx7f3"), or a word.
    strings = [v for v in known if isinstance(v, str) and v]
    tail = "".join(rng.choice("0123456789abcdefghjkmnpqrstuvwxyz") for _ in range(4))
    if strings and rng.random() < 0.5:
        return rng.choice(strings) + tail
    return rng.choice(_WORDS).capitalize() + " " + rng.choice(_WORDS) + "-" + tail


def invent(rng, schema, known, used):
    """A value of the parameter's JSON type that is none of the acceptable ones and none
    of those already invented for this task."""
    known_keys = {json.dumps(v, sort_keys=True) for v in known}
    while True:
        v = _invent_once(rng, schema, known)
        key = json.dumps(v, sort_keys=True)
        if key not in used and key not in known_keys:
            used.add(key)
            return v


def tasks(entry, seed):
    """The entry's labelled tasks, each as a list of samples and a sample as a list of
    turns of `(name, arguments)`: `{"id", "label", "n", "samples", "fabricated"}`."""
    out = []
    shuffle = entry["category"] in PARALLEL

    rng = random.Random(f"{seed}/{entry['id']}/correct")
    n = rng.randint(5, 10)
    samples = []
    for _ in range(n):
        calls = correct_calls(rng, entry)
        if shuffle:
            rng.shuffle(calls)
        samples.append(calls)
    out.append({"id": f"{entry['id']}/correct", "label": "correct", "n": n, "samples": samples, "fabricated": None})

    rng = random.Random(f"{seed}/{entry['id']}/fabricated")
    target = fabrication_target(rng, entry)
    if target is not None:
        i, p = target
        (name, params), = entry["ground_truth"][i].items()
        schema = _docs(entry)[name]["parameters"]["properties"][p]
        known = [v for v in params[p] if v != ""]
        n = rng.randint(6, 10)
        used = set()
        samples = []
        for _ in range(n):
            calls = correct_calls(rng, entry)
            calls[i][1][p] = invent(rng, schema, known, used)
            if shuffle:
                rng.shuffle(calls)
            samples.append(calls)
        out.append({"id": f"{entry['id']}/fabricated", "label": "hallucinated", "n": n, "samples": samples,
                    "fabricated": {"call": i, "tool": name, "param": p}})
    return out


# ---- task shapes ---------------------------------------------------------------------

def native_line(task, parallel):
    """`{"turns": [[call, ...]]}` for calls made together, `{"calls": [call]}` otherwise."""
    samples = []
    for calls in task["samples"]:
        native = [{"tool": n, "arguments": a, "result": RESULT} for n, a in calls]
        samples.append({"turns": [native]} if parallel else {"calls": native})
    return {"task_id": task["id"], "label": task["label"], "samples": samples}


def openai_line(task, question):
    """Each sample an OpenAI Chat transcript: user, assistant with `tool_calls`, one
    `tool` message per call."""
    samples = []
    for calls in task["samples"]:
        ids = [f"call_{k + 1}" for k in range(len(calls))]
        messages = [
            {"role": "user", "content": question},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}}
                for i, (n, a) in zip(ids, calls)]},
        ]
        messages += [{"role": "tool", "tool_call_id": i, "content": json.dumps(RESULT)} for i in ids]
        samples.append({"messages": messages})
    return {"task_id": task["id"], "label": task["label"], "samples": samples}


def anthropic_line(task, question):
    """Each sample an Anthropic transcript: user, assistant `tool_use` blocks, one user
    message with the `tool_result` blocks."""
    samples = []
    for calls in task["samples"]:
        ids = [f"toolu_{k + 1}" for k in range(len(calls))]
        samples.append({"messages": [
            {"role": "user", "content": question},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": i, "name": n, "input": a} for i, (n, a) in zip(ids, calls)]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": json.dumps(RESULT)} for i in ids]},
        ]})
    return {"task_id": task["id"], "label": task["label"], "samples": samples}


def task_lines(entry, seed):
    """The entry's tasks in every shape: `({shape: [line, ...]}, [task, ...])`."""
    ts = tasks(entry, seed)
    parallel = entry["category"] in PARALLEL
    q = user_text(entry)
    lines = {
        "native": [native_line(t, parallel) for t in ts],
        "openai": [openai_line(t, q) for t in ts],
        "anthropic": [anthropic_line(t, q) for t in ts],
    }
    return lines, ts


def probe_line(catalog):
    """A one-task samples file for reading a catalog: one call to its first tool."""
    tools = catalog["tools"] if isinstance(catalog, dict) else catalog
    name = tools[0]["name"] if tools else "none"
    return {"task_id": "read-catalog", "samples": [{"calls": [{"tool": name, "arguments": {}, "result": RESULT}]}]}


# ---- the data's oddities, counted for the report -------------------------------------

_PY = {"string": (str,), "integer": (int,), "float": (int, float), "boolean": (bool,), "array": (list,),
       "tuple": (list,), "dict": (dict,), "any": (str,)}


def oddities(entries):
    """What in BFCL's data a JSON Schema reader may trip on, counted with examples."""
    from collections import Counter, defaultdict
    counts = Counter()
    examples = defaultdict(list)

    def note(kind, what):
        counts[kind] += 1
        if len(examples[kind]) < 3:
            examples[kind].append(what)

    def walk(props, where):
        for k, s in props.items():
            t = s.get("type")
            counts[f"type {t}"] += 1
            if t not in ("string", "integer", "number", "boolean", "array", "object", "null"):
                note(f"non-JSON-Schema type {t!r}", f"{where}.{k}")
            if "default" in s and t in _PY:
                d = s["default"]
                if not isinstance(d, _PY[t]) or (t in ("integer", "float") and isinstance(d, bool)):
                    note("default of another type than the parameter", f"{where}.{k}: {t} default {d!r}")
            if "optional" in s:
                note("parameter-level `optional` (not JSON Schema)", f"{where}.{k}")
            if isinstance(s.get("items"), dict):
                it = s["items"].get("type")
                if it not in ("string", "integer", "number", "boolean", "array", "object", None):
                    note(f"non-JSON-Schema item type {it!r}", f"{where}.{k}")
                if isinstance(s["items"].get("properties"), dict):
                    walk(s["items"]["properties"], f"{where}.{k}[]")
            if isinstance(s.get("properties"), dict):
                walk(s["properties"], f"{where}.{k}")
            if t == "dict" and "properties" not in s:
                note("dict parameter without properties", f"{where}.{k}")

    for e in entries:
        docs = _docs(e)
        for f in e["function"]:
            if "." in f["name"]:
                note("tool name with '.' (renamed '_' by BFCL's converter)", f"{e['id']}: {f['name']}")
            if f["parameters"].get("type") != "dict":
                note("top-level parameters type other than dict", f"{e['id']}: {f['parameters'].get('type')}")
            walk(f["parameters"].get("properties", {}), f"{e['id']}:{f['name']}")
        for gt in e["ground_truth"]:
            (name, params), = gt.items()
            schema = docs[name]["parameters"]
            props = schema.get("properties", {})
            for p, values in params.items():
                if p not in props:
                    note("answer parameter the function does not declare", f"{e['id']}: {name}.{p} {values}")
                    continue
                if p in schema.get("required", []) and "" in values:
                    note("required parameter marked omittable (\"\")", f"{e['id']}: {name}.{p} {values}")
                t = props[p].get("type")
                for v in values:
                    if v == "" or t not in _PY:
                        continue
                    if v is None or not isinstance(v, _PY[t]) or (t in ("integer", "float") and isinstance(v, bool)):
                        note("acceptable value of another JSON type than the parameter",
                             f"{e['id']}: {name}.{p} ({t}) = {v!r}")
                    elif isinstance(v, dict):
                        note("dict answer written as {key: [alternatives]}", f"{e['id']}: {name}.{p}")
                if len([v for v in values if v != ""]) > 1:
                    counts["parameters with several acceptable values"] += 1
    return {"counts": dict(sorted(counts.items())), "examples": dict(examples)}

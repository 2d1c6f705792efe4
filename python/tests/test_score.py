# plangate.score held equal to `plangate score`: the README example, generated tasks in
# every input form, thresholds, seed-compat, bad lines and bad catalogs; and the
# dict-to-JSON writer held equal to json.dumps.
import json
import math
import random
import subprocess
import sys
import textwrap

import pytest

import plangate

EXAMPLE = "examples/score"


@pytest.fixture(scope="session")
def generated(repo, tmp_path_factory):
    """2,000 generated single-call tasks and their catalog, as files."""
    d = tmp_path_factory.mktemp("gen")
    catalog, tasks = d / "catalog.json", d / "tasks.jsonl"
    with open(tasks, "w") as out:
        subprocess.run(
            [sys.executable, repo / "scripts/bench.d/gen_tasks.py", "--format", "plangate",
             "--count", "2000", "--catalog-out", catalog],
            stdout=out, check=True,
        )
    return catalog, tasks


def test_readme_example_equals_the_cli(repo, cli):
    catalog, samples = repo / EXAMPLE / "catalog.json", repo / EXAMPLE / "samples.jsonl"
    _, want, _ = cli("score", "--catalog", catalog, "--samples", samples)
    got = plangate.score_list(str(catalog), str(samples))
    assert len(want) == 5
    assert got == want
    assert {r["decision"] for r in got} == {"accept", "reject", "defer"}


def test_printing_a_score_shows_the_cli_decisions_and_keeps_them(repo, cli):
    # The README's one-liner: print(plangate.score(catalog, samples)).
    catalog, samples = repo / EXAMPLE / "catalog.json", repo / EXAMPLE / "samples.jsonl"
    _, want, _ = cli("score", "--catalog", catalog, "--samples", samples)
    scores = plangate.score(str(catalog), str(samples))
    first = next(scores)
    assert first == want[0]
    shown = repr(scores)
    assert shown == repr(want[1:])
    assert str(scores) == shown
    # What the repr read is still there to iterate, once.
    assert list(scores) == want[1:]
    assert list(scores) == []


def test_generated_tasks_in_every_form_equal_the_cli(cli, generated):
    catalog, tasks = generated
    code, want, _ = cli("score", "--catalog", catalog, "--samples", tasks)
    assert code in (0, 1) and len(want) == 2000
    lines = tasks.read_text().splitlines()
    dicts = [json.loads(line) for line in lines]
    assert plangate.score_list(catalog, tasks) == want
    assert plangate.score_list(str(catalog), iter(dicts), jobs=3) == want
    assert plangate.score_list(catalog, lines, jobs=1) == want
    assert plangate.score_list(catalog, (line.encode() for line in lines)) == want
    cat = json.loads(catalog.read_text())
    assert plangate.score_list(cat, dicts) == want
    assert plangate.score_list(json.dumps(cat), dicts) == want
    # `==` takes 1 for 1.0 and ignores key order; the records' text does not.
    assert json.dumps(plangate.score_list(catalog, dicts)) == json.dumps(want)


def test_thresholds_and_seed_compat_are_the_cli_flags(cli, generated):
    catalog, tasks = generated
    flags = {"arg_accept": "0.9", "arg_reject": "0.3", "result_accept": "0.7",
             "result_suspect": "0.6", "min_samples": "7"}
    argv = [x for k, v in flags.items() for x in ("--" + k.replace("_", "-"), v)]
    _, want, _ = cli("score", "--catalog", catalog, "--samples", tasks, *argv)
    _, default, _ = cli("score", "--catalog", catalog, "--samples", tasks)
    assert want != default, "the thresholds chosen change no decision"
    kwargs = {k: (int(v) if k == "min_samples" else float(v)) for k, v in flags.items()}
    assert plangate.score_list(catalog, tasks, **kwargs) == want
    for entry in ("gate", "classify"):
        _, seed, _ = cli("score", "--catalog", catalog, "--samples", tasks, f"--seed-compat={entry}")
        assert plangate.score_list(catalog, tasks, seed_compat=entry) == seed


def test_bad_lines_come_back_as_the_cli_writes_them(repo, cli, tmp_path):
    good = (repo / EXAMPLE / "samples.jsonl").read_text().splitlines()
    lines = [
        good[0],
        "",
        "{not json",
        '{"task_id":"no-result","samples":[{"calls":[{"tool":"get_user","arguments":{}}]}]}',
        "   ",
        '{"task_id":"x","samples":"nope"}',
        good[1],
        "[1,2]",
    ]
    samples = tmp_path / "bad.jsonl"
    samples.write_text("\n".join(lines) + "\n")
    catalog = repo / EXAMPLE / "catalog.json"
    code, want, _ = cli("score", "--catalog", catalog, "--samples", samples)
    assert code != 0
    got = plangate.score_list(catalog, lines)
    assert got == want
    assert [r.get("line") for r in got] == [None, 3, 4, 6, None, 8]
    assert got[2]["task_id"] == "no-result" and got[2]["error"]["kind"] == "input"
    assert plangate.score_list(catalog, samples) == want


def _field_warnings(texts):
    """The unknown-field warnings among `texts`, without the prefix naming the run."""
    return [t[t.index("unknown field"):] for t in texts if "unknown field" in t]


def test_foreign_fields_warn_once_per_call_as_the_cli_does(repo, cli, tmp_path):
    # 600 lines over three chunks, each with fields plangate does not know: the records
    # are the CLI's and equal to those without them, and each name is said once.
    good = [json.loads(line) for line in (repo / EXAMPLE / "samples.jsonl").read_text().splitlines()]
    plain, extra = [], []
    for k in range(120):
        for task in good:
            task = dict(task, task_id=f"{task['task_id']}-{k}")
            plain.append(json.dumps(task))
            task = json.loads(json.dumps(task))
            task["trial"] = k
            for sample in task["samples"]:
                sample["model"] = "m-1"
                for call in sample["calls"]:
                    call["id"] = "c-1"
            extra.append(json.dumps(task))
    samples = tmp_path / "extra.jsonl"
    samples.write_text("\n".join(extra) + "\n")
    catalog = repo / EXAMPLE / "catalog.json"
    _, want, stderr = cli("score", "--catalog", catalog, "--samples", samples)
    said = _field_warnings(stderr.splitlines())
    assert [w.split('"')[1] for w in said] == ["id", "model", "trial"], stderr
    assert "passed over on 600 lines" in said[2], stderr
    with pytest.warns(UserWarning) as caught:
        got = plangate.score_list(catalog, extra, jobs=3)
    assert got == want
    assert got == plangate.score_list(catalog, plain)
    messages = [str(w.message) for w in caught]
    assert _field_warnings(messages) == said
    assert all(m.startswith("plangate.score: ") for m in messages if "unknown field" in m)


def test_a_line_over_max_line_bytes_is_a_bad_line(repo, cli):
    catalog, samples = repo / EXAMPLE / "catalog.json", repo / EXAMPLE / "samples.jsonl"
    _, want, _ = cli("score", "--catalog", catalog, "--samples", samples, "--max-line-bytes", "700")
    got = plangate.score_list(catalog, samples, max_line_bytes=700)
    assert got == want
    too_long = [r for r in got if "--max-line-bytes" in r.get("error", {}).get("message", "")]
    assert 0 < len(too_long) < len(got)
    lines = samples.read_text().splitlines()
    assert plangate.score_list(catalog, lines, max_line_bytes=700) == want


@pytest.mark.parametrize("text", ['{"tools": [', '{"tools": [{"name": 3}]}', '{"a":1,"a":2}'])
def test_a_bad_catalog_raises_the_cli_message(repo, cli, tmp_path, text):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(text)
    samples = repo / EXAMPLE / "samples.jsonl"
    code, _, stderr = cli("score", "--catalog", catalog, "--samples", samples)
    assert code == 2
    message = stderr.strip().removeprefix("plangate: error: ")
    with pytest.raises(plangate.CatalogError) as e:
        plangate.score(str(catalog), samples)
    assert str(e.value) == message
    with pytest.raises(plangate.CatalogError, match="catalog <string>"):
        plangate.score(text, samples)


def test_a_missing_catalog_raises_the_cli_message(repo, cli, tmp_path):
    missing = tmp_path / "nope.json"
    _, _, stderr = cli("score", "--catalog", missing, "--samples", repo / EXAMPLE / "samples.jsonl")
    with pytest.raises(plangate.CatalogError) as e:
        plangate.score(missing, [])
    assert str(e.value) == stderr.strip().removeprefix("plangate: error: ")


def test_bad_arguments_raise(repo):
    catalog = repo / EXAMPLE / "catalog.json"
    with pytest.raises(ValueError, match="arg_accept"):
        plangate.score(catalog, [], arg_accept="1.5")
    with pytest.raises(ValueError, match="seed_compat"):
        plangate.score(catalog, [], seed_compat="nope")
    with pytest.raises(ValueError, match="arg_reject 0.9 is above arg_accept 0.1"):
        plangate.score(catalog, [], arg_reject=0.9, arg_accept=0.1)
    with pytest.raises(ValueError, match="result_suspect 0.9 is above result_accept 0.1"):
        plangate.score(catalog, [], result_suspect=0.9, result_accept=0.1)
    with pytest.raises(TypeError, match=r"got one dict \(to score one task, pass \[task\]\)"):
        plangate.score_list(catalog, {"task_id": "a", "samples": []})
    with pytest.raises(TypeError, match="samples item 2"):
        plangate.score_list(catalog, [{"task_id": "a", "samples": []}, 42])


def test_scores_lazily(repo):
    """An endless input still yields: only a few chunks are read ahead."""
    line = (repo / EXAMPLE / "samples.jsonl").read_text().splitlines()[0]

    def endless():
        while True:
            yield line

    first = []
    for record in plangate.score(repo / EXAMPLE / "catalog.json", endless(), jobs=2):
        first.append(record)
        if len(first) == 3000:
            break
    assert {r["task_id"] for r in first} == {"agree"}


def test_the_collector_is_left_as_it_was_and_records_stay_collectable(repo, generated):
    """Building a chunk pauses Python's cyclic collector; afterwards it is on or off as
    the caller had it, and a cycle a caller makes through a record is still collected."""
    import gc
    import weakref

    catalog, tasks = generated
    assert gc.isenabled()
    records = plangate.score_list(catalog, tasks)
    assert gc.isenabled() and len(records) == 2000
    gc.disable()
    try:
        plangate.score_list(catalog, tasks)
        assert not gc.isenabled()
    finally:
        gc.enable()

    class Holder:
        pass

    holder = Holder()
    record = records[0]
    record["holder"], holder.record = holder, record
    alive = weakref.ref(holder)
    del holder, record, records
    gc.collect()
    assert alive() is None


def _values(rng, depth=0):
    kinds = ["int", "float", "str", "bool", "none"] + (["list", "dict"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.choice([0, -1, 7, 2**53 + 1, -(2**70), 10**30])
    if kind == "float":
        return rng.choice([
            0.0, -0.0, 1.5, 1e16, 1e15, 123456789012345678.0, 1e-4, 1e-5, 0.1, 2.5e-300,
            1.7976931348623157e308, math.nan, math.inf, -math.inf, rng.uniform(-1e6, 1e6),
            rng.random() * 10 ** rng.randint(-30, 30),
        ])
    if kind == "str":
        return rng.choice(["", "a\"b\\c", "line\nbreak\t\r\b\f", "\x00\x1f\x7f", "é✓𝄞", "u_42"])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "none":
        return None
    if kind == "list":
        return [_values(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}": _values(rng, depth + 1) for i in range(rng.randint(0, 4))}


def test_dumps_writes_what_json_dumps_writes():
    rng = random.Random(5)
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    for _ in range(3000):
        v = _values(rng)
        assert plangate.dumps(v) == json.dumps(v, **compact), v
    # Every kind of double, from random bits: subnormals, NaNs, both zeros, and the
    # layouts Python's repr switches between at 1e-4 and 1e16.
    import struct
    doubles = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
               for _ in range(20000)]
    doubles += [rng.randint(1, 10**17) / 10**rng.randint(0, 22) for _ in range(20000)]
    assert plangate.dumps(doubles) == json.dumps(doubles, **compact)
    # What the walk leaves to json.dumps: subclasses, non-string keys, tuples.
    import collections
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    for v in [collections.OrderedDict(a=1), {1: "x"}, (1, 2), {"l": Level.HIGH}]:
        assert plangate.dumps(v) == json.dumps(v, **compact)
    with pytest.raises(TypeError):
        plangate.dumps({"s": {1, 2}})


def test_records_read_back_as_json_loads_reads_them():
    """Workers pickle a chunk's records and the iterator unpickles them; what comes back
    must be what json.loads makes of the same texts, type for type (int or float, -0.0,
    1e400), key order, repeated keys and shared strings included, and a chunk pickling
    cannot carry goes to json.loads whole."""
    from plangate._plangate import _load_records

    def same(texts):
        got, want = _load_records(texts), [json.loads(t) for t in texts]
        # json.dumps tells 1 from 1.0 and keeps NaN, where == would not.
        assert json.dumps(got) == json.dumps(want), texts
        assert [list(r) for r in got] == [list(r) for r in want]

    rng = random.Random(11)
    for _ in range(300):
        same([json.dumps({"task_id": f"t{i}", "v": _values(rng), "w": [_values(rng)]})
              for i in range(rng.randint(1, 6))])
    edges = [
        '{"i":[0,-1,2147483647,2147483648,-2147483648,-2147483649,1267650600228229401496703205376]}',
        '{"i":-170141183460469231731687303715884105728,"j":170141183460469231731687303715884105727}',
        '{"f":[1.0,-0.0,1e400,-1e400,5e-324,1E2,0.1,12345678901234567890.0]}',
        '{"a":1,"b":2,"a":3}',
        '{"s":"' + "é✓𝄞" * 200 + '","e":"","q":"\\"\\\\\\n\\u0000"}',
        json.dumps({f"key{i}": f"value{i % 300}" for i in range(700)}),
        '{"empty":{},"none":[],"n":null,"t":true,"f":false}',
    ]
    same(edges)
    # Beyond what pickling takes: a lone surrogate, an integer past 128 bits, nesting
    # past the gate's reader; each sends its chunk to json.loads, equal all the same.
    for odd in ['{"s":"\\ud800"}', '{"i":' + str(2**200) + '}', '[' * 300 + ']' * 300]:
        same(edges + [odd])


def _run(code, timeout=60):
    """Runs `code` in a fresh interpreter: a hang or a crash fails the test, not CI."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_iterator_advanced_while_running_is_refused_not_deadlocked(repo):
    """From a second thread, or from the samples generator it is reading, the iterator
    refuses as a running generator does, rather than wait for itself forever."""
    out = _run(f"""
        import threading, plangate
        cat = {str(repo / EXAMPLE / "catalog.json")!r}
        lines = open({str(repo / EXAMPLE / "samples.jsonl")!r}).read().splitlines()
        it = plangate.score(cat, lines * 4000)
        got, refused = [], []
        def take():
            try:
                got.extend(it)
            except ValueError as e:
                refused.append(str(e))
        ts = [threading.Thread(target=take) for _ in range(4)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print(len(got) + 0, all("already running" in r for r in refused))

        def gen():
            yield lines[0]
            next(it2)
            yield lines[1]
        it2 = plangate.score(cat, gen())
        try:
            list(it2)
        except ValueError as e:
            print("reentrant:", "already running" in str(e))
    """)
    first, second = out.splitlines()
    taken, all_refusals_say_so = first.split()
    # However the threads interleaved, no record was lost or given twice.
    assert all_refusals_say_so == "True" and int(taken) <= 5 * 4000
    assert second == "reentrant: True"


def test_an_iterator_in_a_cycle_is_collected(repo):
    out = _run(f"""
        import gc, weakref, plangate
        cat = {str(repo / EXAMPLE / "catalog.json")!r}
        lines = open({str(repo / EXAMPLE / "samples.jsonl")!r}).read().splitlines()

        class Run:
            def __init__(self):
                self.tasks = self.read()
                self.scores = plangate.score(cat, self.tasks)

            def read(self):
                yield from lines * 100

        refs = []
        for _ in range(5):
            run = Run()
            next(run.scores)
            refs.append(weakref.ref(run.tasks))
            del run
        gc.collect()
        print(sum(r() is not None for r in refs))
    """)
    assert out.strip() == "0"


def test_a_failing_input_keeps_what_came_before_it(repo, cli):
    """Items read before the iterable raises (or hands over something that is not a
    task) are scored and returned first; then the error; then the iterator is done. A
    task dict json.dumps refuses is that line's error record, as a line that is not
    JSON is in a file."""
    catalog = repo / EXAMPLE / "catalog.json"
    lines = (repo / EXAMPLE / "samples.jsonl").read_text().splitlines()
    _, want, _ = cli("score", "--catalog", catalog, "--samples", repo / EXAMPLE / "samples.jsonl")

    def failing():
        yield from lines
        raise RuntimeError("the source broke")

    it = plangate.score(str(catalog), failing())
    got = [next(it) for _ in range(len(lines))]
    assert got == want
    with pytest.raises(RuntimeError, match="the source broke"):
        next(it)
    assert list(it) == []

    it = plangate.score(str(catalog), [*lines[:3], 42, *lines[3:]])
    assert [next(it) for _ in range(3)] == want[:3]
    with pytest.raises(TypeError, match="samples item 4"):
        next(it)
    assert list(it) == []

    bad = {"task_id": "s", "samples": [{"calls": [{"tool": "t", "arguments": {1, 2}}]}]}
    got = plangate.score_list(str(catalog), [lines[0], bad, "\ud800", lines[1]])
    assert got[0] == want[0] and got[3] == want[1]
    assert got[1]["line"] == 2 and "not JSON" in got[1]["error"]["message"]
    assert got[2]["line"] == 3 and "not UTF-8" in got[2]["error"]["message"]
    assert got[1]["error"]["kind"] == "input"


@pytest.mark.parametrize("depth", [500, 1000, 5000])
def test_a_dict_nested_past_pythons_limit_is_its_lines_error_record(repo, cli, depth):
    """Whatever converting a task dict raises (RecursionError for one nested past
    Python's recursion limit) is that line's error record: the tasks after it are still
    scored."""
    catalog = repo / EXAMPLE / "catalog.json"
    lines = (repo / EXAMPLE / "samples.jsonl").read_text().splitlines()
    _, want, _ = cli("score", "--catalog", catalog, "--samples", repo / EXAMPLE / "samples.jsonl")
    deep: dict = {}
    inner = deep
    for _ in range(depth):
        inner["x"] = {}
        inner = inner["x"]
    bad = {"task_id": "deep", "samples": [{"calls": [{"tool": "t", "arguments": deep}]}]}
    got = list(plangate.score(str(catalog), [lines[0], bad, lines[1]]))
    assert len(got) == 3
    assert got[0] == want[0] and got[2] == want[1]
    assert got[1]["line"] == 2 and got[1]["error"]["kind"] == "input", got[1]

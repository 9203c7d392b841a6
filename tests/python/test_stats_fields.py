"""memory_stats() and queue_stats() are framework/stats.h's records: the
dicts' keys are the fields its lists declare (AMLP_*_FIELDS), in their
order, and docs/python.md's table of the keys is the one those lists make
(between its markers; on a difference the test prints the table to paste)."""
import os
import re

import asyncmlp as am

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN = "<!-- stats keys: framework/stats.h -->\n"
END = "<!-- /stats keys -->"


def declared():
    """Each list of framework/stats.h as [(name, meaning)], by the list's name
    (MEMORY_STATS, ...), and MemoryStats' own key past its fields (fresh_bytes)."""
    with open(os.path.join(ROOT, "framework", "stats.h"), encoding="utf-8") as f:
        text = f.read()
    lists = {}
    for block in re.finditer(r"#define AMLP_(\w+)_FIELDS\(X\)((?:.*\\\n)*.*\n)", text):
        lists[block.group(1)] = re.findall(r'X\(\w+, (\w+), "([^"]*)"\)', block.group(2))
    assert set(lists) == {"FRESH_BACKING", "MEMORY_STATS", "QUEUE_STATS"}, lists.keys()
    assert all(lists.values()), lists
    # for_each_field(MemoryStats): its fields, `fresh`'s as fresh_<field>, then fresh_bytes.
    total = re.search(r'f\(std::string\("(fresh_bytes)"\), s\.fresh\.bytes\(\), "([^"]*)"\);', text)
    assert total, "framework/stats.h: for_each_field(MemoryStats) no longer ends with fresh_bytes"
    memory = lists["MEMORY_STATS"] + [("fresh_" + k, m) for k, m in lists["FRESH_BACKING"]] + [total.groups()]
    return memory, lists["QUEUE_STATS"]


def markdown(memory, queue):
    def table(rows):
        return "| key | meaning |\n|---|---|\n" + "".join(f"| `{k}` | {m} |\n" for k, m in rows)

    return "`memory_stats(device)`:\n\n" + table(memory) + "\n`queue_stats(device)`:\n\n" + table(queue)


def test_the_dicts_keys_are_the_declared_fields_in_order():
    memory, queue = declared()
    dev = am.cpu(5)
    (am.ones((8, 8), device=dev) + 1).wait_to_read()
    assert list(am.memory_stats(dev)) == [k for k, _ in memory]
    assert list(am.queue_stats(dev)) == [k for k, _ in queue]
    # The values are the records': a field the dict dropped or mixed up shows here.
    q = am.queue_stats(dev)
    assert q["pushed"] >= 2 and q["completed"] == q["pushed"] - q["depth"]
    m = am.memory_stats(dev)
    assert m["alloc_count"] >= 2 and m["peak_bytes"] >= m["bytes_in_use"] and m["raw_alloc_count"] >= 1
    assert m["fresh_bytes"] == m["fresh_worker_bytes"] + m["fresh_populator_bytes"]


def test_python_mds_table_is_the_declared_one():
    with open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8") as f:
        doc = f.read()
    assert BEGIN in doc and END in doc, f"docs/python.md lacks {BEGIN!r} or {END!r}"
    want = markdown(*declared())
    got = doc[doc.index(BEGIN) + len(BEGIN):doc.index(END)]
    assert got == want, "docs/python.md's table between the two markers must read (framework/stats.h's):\n" + want


if __name__ == "__main__":  # the table, to paste into docs/python.md
    print(markdown(*declared()), end="")

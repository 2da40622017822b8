// Generated graphs for the tests (not a test file itself: it defines none).
// bench/view.py builds the same graph in Python (same seed, same rules) to time it in a browser.

/** A small deterministic PRNG (mulberry32), so every run draws the same graph. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ["fetch", "rank", "summarize", "check", "plan", "call_tool", "review", "merge", "parse", "retry_with_backoff"];

/**
 * A DAG-JSON graph of `count` nodes with branches and cycles: each node follows one of the
 * four before it, a third also branch forward under a condition, every tenth loops back.
 */
export function bigGraph(count = 200, seed = 7) {
  const rnd = random(seed);
  const pick = (n) => Math.floor(rnd() * n);
  const nodes = [{ id: "__start__", kind: "start" }];
  const ids = [];
  for (let i = 0; i < count; i++) {
    const id = `${WORDS[pick(WORDS.length)]}_${String(i).padStart(3, "0")}`;
    ids.push(id);
    const kind = i % 7 === 3 ? "llm" : "function";
    const node = { id, kind, approval: i % 23 === 11 };
    if (kind === "llm" && i % 2) node.tools = ["search", "fetch"];
    nodes.push(node);
  }
  nodes.push({ id: "__end__", kind: "end" });
  const edges = [{ from: "__start__", to: ids[0], label: null, unconditional: true }];
  for (let i = 1; i < count; i++) {
    const from = ids[Math.max(0, i - 1 - pick(4))];
    edges.push({ from, to: ids[i], label: null, unconditional: true });
    if (rnd() < 0.33 && i + 2 < count) {
      edges.push({ from: ids[i], to: ids[i + 2 + pick(4)] ?? ids[count - 1], label: `state.route == "${WORDS[pick(5)]}"`, unconditional: false });
    }
    if (i % 10 === 9) edges.push({ from: ids[i], to: ids[i - 5 - pick(8)], label: "state.retries < 3", unconditional: false });
  }
  edges.push({ from: ids[count - 1], to: "__end__", label: null, unconditional: true });
  return { version: "1.2", mode: "graph", name: `big${count}`, nodes, edges };
}

/**
 * A chain of `count` nodes, some of which may skip two ahead under a condition: long and
 * narrow, like an agent's pipeline.
 */
export function chainGraph(count = 40) {
  const ids = Array.from({ length: count }, (_, i) => `step_${String(i).padStart(2, "0")}`);
  const nodes = [{ id: "__start__", kind: "start" }, ...ids.map((id) => ({ id, kind: "function", approval: false })), { id: "__end__", kind: "end" }];
  const edges = [{ from: "__start__", to: ids[0], label: null, unconditional: true }];
  ids.forEach((id, i) => {
    edges.push({ from: id, to: ids[i + 1] || "__end__", label: null, unconditional: true });
    if (i % 4 === 1 && i + 2 < count) edges.push({ from: id, to: ids[i + 2], label: "state.skip", unconditional: false });
  });
  return { version: "1.2", mode: "graph", name: `chain${count}`, nodes, edges };
}

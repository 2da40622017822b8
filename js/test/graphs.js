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

const node = (id, kind = "function", more = {}) => ({ id, kind, approval: false, ...more });
const edge = (from, to, label = null, more = {}) => ({ from, to, label, unconditional: label === null, ...more });

/**
 * The shape agents take: a model node that calls itself again until done, with long
 * conditions (notebook 08's assistant), a nudge that goes back to it, and two ways out.
 */
export function agentGraph() {
  return {
    version: "1.3", mode: "graph", name: "agent_graph",
    nodes: [node("__start__", "start"), node("input_handler"), node("agent", "llm", { tools: ["look_up"] }), node("wrapper_nudge"), node("__end__", "end")],
    edges: [
      edge("__start__", "input_handler"),
      edge("input_handler", "agent"),
      edge("agent", "__end__", 'state.status in ("done", "blocked")'),
      edge("agent", "wrapper_nudge", 'state.status == "in_progress" and not state.tool_calls and state.nudges < 1'),
      edge("agent", "agent", 'state.status == "continue" or state.tool_calls > 0'),
      edge("agent", "__end__"),
      edge("wrapper_nudge", "agent"),
    ],
  };
}

/**
 * Loops everywhere: two on one node (a condition and a declared goto), one on a node beside
 * it, one inside a sub-graph (drawn once its frame is open), and a router back up.
 */
export function loopsGraph() {
  const inner = {
    name: "review",
    nodes: [node("__start__", "start"), node("read"), node("score", "llm"), node("__end__", "end")],
    edges: [
      edge("__start__", "read"), edge("read", "score"),
      edge("score", "score", "state.confidence < 0.8 and state.rounds < 3"),
      edge("score", "__end__"),
    ],
  };
  return {
    version: "1.3", mode: "graph", name: "loops",
    nodes: [
      node("__start__", "start"), node("run_step"), node("audit"), node("report", "function", { approval: true }),
      node("review", "graph", { graph: inner }), node("__end__", "end"),
    ],
    edges: [
      edge("__start__", "run_step"),
      edge("run_step", "report"),
      edge("run_step", "run_step", "goto", { goto: true }),
      edge("run_step", "run_step", "state.retries < 3"),
      edge("run_step", "audit", "goto", { goto: true }),
      edge("audit", "audit", "state.pending"),
      edge("audit", "run_step"),
      edge("report", "review"),
      edge("review", "run_step", "route_after_review", { router: true }),
      edge("review", "__end__", "route_after_review", { router: true }),
    ],
  };
}

/** Branches: a fan-out, a join, a map, and a sub-graph that nests another. */
export function branchesGraph() {
  const deep = {
    name: "deep",
    nodes: [node("__start__", "start"), node("dig"), node("__end__", "end")],
    edges: [edge("__start__", "dig"), edge("dig", "__end__")],
  };
  const research = {
    name: "research",
    nodes: [node("__start__", "start"), node("search", "llm"), node("deep", "graph", { graph: deep }), node("rank"), node("__end__", "end")],
    edges: [
      edge("__start__", "search"), edge("search", "deep"), edge("deep", "rank"),
      edge("rank", "search", "state.more"), edge("rank", "__end__"),
    ],
  };
  return {
    version: "1.3", mode: "graph", name: "trip",
    nodes: [
      node("__start__", "start"), node("plan"), node("flights"), node("hotels"), node("gather"),
      node("ask", "function", { map: true }), node("research", "graph", { graph: research, mapping: true }), node("__end__", "end"),
    ],
    edges: [
      edge("__start__", "plan"),
      edge("plan", "flights", null, { fanout: ["flights", "hotels"] }),
      edge("plan", "hotels", null, { fanout: ["flights", "hotels"] }),
      edge("flights", "gather", null, { join: ["flights", "hotels"] }),
      edge("hotels", "gather", null, { join: ["flights", "hotels"] }),
      { ...edge("gather", "ask", "each city", { each: true }), unconditional: true },
      edge("ask", "research"),
      edge("research", "__end__"),
    ],
  };
}

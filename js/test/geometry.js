// The geometry a drawing must have, checked on the layout's output (in Node) and on what a
// browser drew (its SVG, measured). No imports: the browser tests load this file as it is.
// A drawing here is {nodes: [{path, box}], edges: [{key, from, to, start, end}], labels: [{key, from, box}]}
// in one coordinate system; boxes are {x, y, width, height} from their top-left corner.

/** Distance from point `p` to the border of `box`, from inside or out. */
export function borderDistance(p, box) {
  const dx = Math.max(box.x - p.x, 0, p.x - (box.x + box.width));
  const dy = Math.max(box.y - p.y, 0, p.y - (box.y + box.height));
  if (dx || dy) return Math.hypot(dx, dy);
  return Math.min(p.x - box.x, box.x + box.width - p.x, p.y - box.y, box.y + box.height - p.y);
}

/** Whether two boxes overlap by more than `slack` pixels both ways. */
export function overlaps(a, b, slack = 1) {
  return Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x) > slack
    && Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y) > slack;
}

/** The level (the path of the frame it is drawn in) of a node path. */
function levelOf(path) {
  return path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
}

/** Whether `frame` holds what is drawn at `level` (so it may lie over it). */
function holds(frame, level) {
  return level === frame || level.startsWith(`${frame}/`);
}

/**
 * What is wrong with a drawing: an edge that does not start on its source's border or end on
 * its target's (within `tolerance` px), a label box over a node, two label boxes over each
 * other, two nodes over each other (a frame and what it holds excepted). [] when nothing is.
 */
export function geometryProblems(drawing, { tolerance = 3 } = {}) {
  const problems = [];
  const boxes = new Map(drawing.nodes.map((node) => [node.path, node.box]));
  for (const edge of drawing.edges) {
    for (const [end, path, verb] of [[edge.start, edge.from, "starts"], [edge.end, edge.to, "ends"]]) {
      const box = boxes.get(path);
      const off = box ? borderDistance(end, box) : Infinity;
      if (off > tolerance) problems.push(`edge ${edge.key} ${verb} ${off.toFixed(1)} px from node ${path}`);
    }
    if (edge.problem) problems.push(`edge ${edge.key}: ${edge.problem}`);
  }
  for (const label of drawing.labels) {
    const level = levelOf(label.from);
    for (const node of drawing.nodes) {
      if (!holds(node.path, level) && overlaps(label.box, node.box)) problems.push(`the label of ${label.key} covers node ${node.path}`);
    }
  }
  drawing.labels.forEach((a, i) => {
    for (const b of drawing.labels.slice(i + 1)) {
      if (overlaps(a.box, b.box)) problems.push(`the labels of ${a.key} and ${b.key} overlap`);
    }
  });
  drawing.nodes.forEach((a, i) => {
    for (const b of drawing.nodes.slice(i + 1)) {
      const nested = holds(a.path, levelOf(b.path)) || holds(b.path, levelOf(a.path));
      if (!nested && overlaps(a.box, b.box)) problems.push(`nodes ${a.path} and ${b.path} overlap`);
    }
  });
  return problems;
}

/**
 * The drawing a layout describes (layoutGraph's output), open frames' insides included,
 * placed as the view draws them: an open frame's graph under its title row (`frameHead` px).
 */
export function laidDrawing(laid, frameHead, origin = { x: 0, y: 0 }) {
  const drawing = { nodes: [], edges: [], labels: [] };
  for (const node of laid.nodes) {
    const box = { x: origin.x + node.x - node.width / 2, y: origin.y + node.y - node.height / 2, width: node.width, height: node.height };
    drawing.nodes.push({ path: node.path, box });
    if (node.inner) {
      const inner = laidDrawing(node.inner, frameHead, { x: box.x + (node.width - node.inner.width) / 2, y: box.y + frameHead });
      for (const part of ["nodes", "edges", "labels"]) drawing[part].push(...inner[part]);
    }
  }
  const at = (p) => ({ x: origin.x + p.x, y: origin.y + p.y });
  for (const edge of laid.edges) {
    const from = laid.prefix + edge.from;
    drawing.edges.push({ key: edge.key, from, to: laid.prefix + edge.to, start: at(edge.points[0]), end: at(edge.points[edge.points.length - 1]) });
    if (edge.labelBox) {
      const { x, y, width, height } = edge.labelBox;
      drawing.labels.push({ key: edge.key, from, box: { x: origin.x + x - width / 2, y: origin.y + y - height / 2, width, height } });
    }
  }
  return drawing;
}

/**
 * The drawing an SVG of the view shows, measured in the browser in the coordinates of its
 * scene (whatever the zoom). An arm of a join ends on the join's bar, whose stub goes on
 * into the node: the arm is taken to end where the stub does, once it is seen to reach the bar.
 * @param {SVGSVGElement} root
 */
export function drawnDrawing(root, { tolerance = 3 } = {}) {
  const scene = root.querySelector(".nbg-scene");
  const back = scene.getCTM().inverse();
  const toScene = (el, x, y) => new DOMPoint(x, y).matrixTransform(back.multiply(el.getCTM()));
  const boxOf = (el) => {
    const b = el.getBBox();
    const corners = [toScene(el, b.x, b.y), toScene(el, b.x + b.width, b.y + b.height)];
    const x = Math.min(corners[0].x, corners[1].x);
    const y = Math.min(corners[0].y, corners[1].y);
    return { x, y, width: Math.abs(corners[1].x - corners[0].x), height: Math.abs(corners[1].y - corners[0].y) };
  };
  const ends = (path) => {
    const length = path.getTotalLength();
    const [a, b] = [path.getPointAtLength(0), path.getPointAtLength(length)];
    return [toScene(path, a.x, a.y), toScene(path, b.x, b.y)];
  };
  const drawing = { nodes: [], edges: [], labels: [] };
  for (const group of root.querySelectorAll(".nbg-node[data-node]")) {
    const box = group.querySelector(":scope > .nbg-node-box, :scope > .nbg-frame-handle > .nbg-node-box");
    drawing.nodes.push({ path: group.dataset.node, box: boxOf(box) });
  }
  for (const group of root.querySelectorAll(".nbg-edge[data-edge]")) {
    const key = group.dataset.edge;
    const [from, to] = key.split("\u2192");
    let [start, end] = ends(group.querySelector(":scope > path:not(.nbg-hit)"));
    let problem = "";
    const join = group.classList.contains("nbg-join") && root.querySelector(`.nbg-join-point[data-join="${CSS.escape(to)}"]`);
    if (join) {
      const bar = boxOf(join.querySelector(".nbg-join-bar"));
      const off = borderDistance(end, { ...bar, y: bar.y + bar.height / 2, height: 0 });
      if (off > tolerance) problem = `ends ${off.toFixed(1)} px from the bar of the join into ${to}`;
      end = ends(join.querySelector("path:not(.nbg-join-bar)"))[1];
    }
    drawing.edges.push({ key, from, to, start, end, problem });
    const label = group.querySelector(".nbg-edge-label");
    if (label) drawing.labels.push({ key, from, box: boxOf(label) });
  }
  return drawing;
}

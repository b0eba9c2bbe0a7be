import assert from "node:assert/strict";
import type { Edge } from "../../cli/edges.ts";
import { findKind } from "../../cli/kinds.ts";
import {
  foldTraffic,
  layout,
  shapeGraph,
  toneOf,
  trafficQuery,
  unmeshedTrafficQuery,
  widthOf,
} from "./topology_graph.ts";

const deploy = findKind("deploy");

function edge(src: string, dst: string, extra: Partial<Edge> = {}): Edge {
  const ref = (s: string) => s ? { namespace: "demo", name: s } : { namespace: "", name: "" };
  return {
    src: ref(src),
    dst: ref(dst),
    client_id: "",
    server_id: "",
    secured: true,
    no_tls_reason: "",
    seen_by: ["client"],
    ...extra,
  };
}

const sample = (src: string, dst: string, classification: string, value: number) => ({
  metric: { namespace: "demo", deployment: src, dst_namespace: "demo", dst_deployment: dst, classification },
  value,
});

Deno.test("topology: the traffic query reads the client side's responses by classification", () => {
  const q = trafficQuery(deploy, "1m");
  assert.ok(q.startsWith("sum(increase(response_total{"), q);
  assert.ok(q.includes(`direction="outbound"`) && q.includes(`dst_deployment!=""`), q);
  assert.ok(q.endsWith("by (namespace, deployment, dst_namespace, dst_deployment, classification)"), q);
});

Deno.test("topology: RPS and success rate per edge from the responses over the window", () => {
  const traffic = foldTraffic(deploy, [
    sample("web", "api", "success", 594),
    sample("web", "api", "failure", 6),
    sample("vote", "api", "success", 30),
    sample("vote", "api", "failure", 30),
    sample("web", "emoji", "success", 0),
  ]);
  const g = shapeGraph([edge("web", "api"), edge("vote", "api"), edge("web", "emoji")], traffic, 60);
  const e = (from: string, to: string) =>
    g.edges.find((x) => x.from === `demo/${from}` && x.to === `demo/${to}`)!;
  assert.deepEqual(e("web", "api").rps, 10);
  assert.deepEqual(e("web", "api").successRate, 0.99);
  assert.deepEqual(e("web", "api").tone, "good");
  assert.deepEqual(e("web", "api").failing, false);
  assert.deepEqual(e("vote", "api").rps, 1);
  assert.deepEqual(e("vote", "api").tone, "bad");
  assert.deepEqual(e("vote", "api").failing, true);
  // No responses (a TCP-only edge, or a zero sample): no rate, no colour, thinnest stroke.
  assert.deepEqual(e("web", "emoji").rps, 0);
  assert.deepEqual(e("web", "emoji").successRate, undefined);
  assert.deepEqual(e("web", "emoji").tone, "none");
  assert.ok(
    e("web", "api").width > e("vote", "api").width && e("vote", "api").width > e("web", "emoji").width,
  );
});

Deno.test("topology: colour bands and stroke widths", () => {
  assert.deepEqual([toneOf(1), toneOf(0.99), toneOf(0.97), toneOf(0.95), toneOf(0.5)], [
    "good",
    "good",
    "warn",
    "warn",
    "bad",
  ]);
  assert.deepEqual(widthOf(0), 1.5);
  assert.ok(widthOf(1000) > widthOf(10) && widthOf(1e9) === 9.5);
});

Deno.test("topology: an edge that is not mTLS carries the proxy's reason and weft edges' text", () => {
  const g = shapeGraph(
    [
      edge("", "api", { secured: false, no_tls_reason: "no_tls_from_remote", seen_by: ["server"] }),
      edge("web", "api", { secured: true, client_id: "web.demo.serviceaccount.identity.weft.cluster.local" }),
    ],
    new Map(),
    60,
  );
  const plain = g.edges.find((e) => e.from === "(unmeshed)")!;
  assert.deepEqual(plain.mtls, false);
  assert.deepEqual(plain.noTlsReason, "no_tls_from_remote");
  assert.deepEqual(plain.noTlsText, "the client sent no identity");
  const secured = g.edges.find((e) => e.from === "demo/web")!;
  assert.deepEqual([secured.mtls, secured.noTlsReason, secured.noTlsText], [true, "", ""]);
  assert.deepEqual(secured.clientId, "web.demo.serviceaccount.identity.weft.cluster.local");
  const unmeshed = g.nodes.find((n) => n.id === "(unmeshed)")!;
  assert.deepEqual(unmeshed.kind, "unmeshed");
});

Deno.test("topology: nodes by kind — workloads link, service accounts and Services do not", () => {
  const g = shapeGraph([edge("sa/gone", "api"), edge("web", "svc/legacy")], new Map(), 60);
  const kinds = Object.fromEntries(g.nodes.map((n) => [n.name, n.kind]));
  assert.deepEqual(kinds, {
    "sa/gone": "serviceaccount",
    api: "workload",
    web: "workload",
    "svc/legacy": "service",
  });
});

Deno.test("topology: layers follow the calls, callers left of callees, deterministic", () => {
  // The emojivoto shape: vote-bot → web → {emoji, voting}.
  const links = [
    { from: "d/vote-bot", to: "d/web" },
    { from: "d/web", to: "d/voting" },
    { from: "d/web", to: "d/emoji" },
  ];
  const ids = ["d/web", "d/voting", "d/emoji", "d/vote-bot"];
  const p = layout(ids, links);
  assert.deepEqual(p.get("d/vote-bot"), { layer: 0, row: 0 });
  assert.deepEqual(p.get("d/web"), { layer: 1, row: 0 });
  assert.deepEqual(p.get("d/emoji"), { layer: 2, row: 0 });
  assert.deepEqual(p.get("d/voting"), { layer: 2, row: 1 });
  // Input order does not matter.
  assert.deepEqual([...layout([...ids].reverse(), [...links].reverse())].sort(), [...p].sort());
});

Deno.test("topology: a cycle and a self-loop still get a bounded layout with every node placed", () => {
  const p = layout(["a", "b", "c"], [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "a" }, {
    from: "b",
    to: "b",
  }]);
  assert.deepEqual(p.size, 3);
  for (const v of p.values()) assert.ok(v.layer >= 0 && v.layer < 3, JSON.stringify(v));
});

Deno.test("topology: node positions come from the layout and the canvas holds them", () => {
  const g = shapeGraph([edge("web", "api"), edge("web", "emoji"), edge("api", "db")], new Map(), 60);
  for (const n of g.nodes) {
    assert.ok(n.x > 0 && n.x < g.width && n.y > 0 && n.y <= g.height, JSON.stringify(n));
  }
  const x = Object.fromEntries(g.nodes.map((n) => [n.name, n.x]));
  assert.ok(x.web < x.api && x.api < x.db);
  assert.deepEqual(x.api, x.emoji);
});

Deno.test("topology: requests from clients without identity are counted by the server side", () => {
  assert.ok(unmeshedTrafficQuery(deploy, "5m").includes(`direction="inbound", deployment!="", client_id=""`));
  const traffic = foldTraffic(deploy, [
    { metric: { namespace: "demo", deployment: "api", classification: "success" }, value: 120 },
    { metric: { namespace: "demo", deployment: "api", classification: "failure" }, value: 30 },
  ]);
  const g = shapeGraph(
    [edge("", "api", { secured: false, no_tls_reason: "no_tls_from_remote" })],
    traffic,
    60,
  );
  assert.deepEqual([g.edges[0].from, g.edges[0].rps, g.edges[0].successRate, g.edges[0].tone], [
    "(unmeshed)",
    2.5,
    0.8,
    "bad",
  ]);
});

/**
 * The Topology page's graph: `weft edges`' edges (cli/edges.ts) with each edge's request rate and success
 * rate from the client proxies' `response_total`, shaped into nodes and edges with a deterministic layered
 * layout, so the browser only draws. Pure: samples in, graph out.
 */
import type { Edge, Ref } from "../../cli/edges.ts";
import type { Kind } from "../../cli/kinds.ts";
import type { PromSample } from "../../cli/prometheus.ts";
import { by, selector } from "../../cli/promql.ts";
import { reasonText } from "../../cli/edges.ts";

export type Tone = "good" | "warn" | "bad" | "none";

export interface GraphNode {
  id: string;
  namespace: string;
  name: string;
  /** "workload" links to its page; "unmeshed", "serviceaccount" and "service" do not. */
  kind: "workload" | "unmeshed" | "serviceaccount" | "service";
  x: number;
  y: number;
  layer: number;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** Requests per second seen by the client proxy over the window; 0 for TCP-only edges. */
  rps: number;
  /** Share of successful responses, undefined when no HTTP responses were seen. */
  successRate?: number;
  tone: Tone;
  /** Drawn dashed and labelled, so failing edges are told apart without colour. */
  failing: boolean;
  width: number;
  mtls: boolean;
  /** The proxy's reason (as `weft edges -o json`) and its text (as the `weft edges` table). */
  noTlsReason: string;
  noTlsText: string;
  clientId: string;
  serverId: string;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  width: number;
  height: number;
}

/** Success rate at or above: green; at or above WARN: amber; below: red (Linkerd viz's bands). */
export const GOOD = 0.99;
export const WARN = 0.95;
export const LAYER_GAP = 280;
export const ROW_GAP = 90;
/** Room around the boxes (the page draws them 164 px wide, centred on x) and for edges bowing below. */
export const MARGIN = 100;

/** Each client-side edge's responses over the window, by classification (the series `weft edges` reads). */
export function trafficQuery(kind: Kind, window: string): string {
  const l = kind.label;
  const sel = selector([{ label: "direction", value: "outbound" }, { label: l, op: "!=", value: "" }, {
    label: `dst_${l}`,
    op: "!=",
    value: "",
  }]);
  return `sum(increase(response_total${sel}[${window}])) by ${
    by(["namespace", l, "dst_namespace", `dst_${l}`, "classification"])
  }`;
}

/**
 * Responses the server side saw from clients without an identity (probes, unmeshed pods): the client proxy that
 * would have counted them does not exist, and `weft edges` shows them as one "(unmeshed)" source.
 */
export function unmeshedTrafficQuery(kind: Kind, window: string): string {
  const l = kind.label;
  const sel = selector([{ label: "direction", value: "inbound" }, { label: l, op: "!=", value: "" }, {
    label: "client_id",
    value: "",
  }]);
  return `sum(increase(response_total${sel}[${window}])) by ${by(["namespace", l, "classification"])}`;
}

export interface Traffic {
  success: number;
  failure: number;
}

function key(src: Ref, dst: Ref): string {
  return `${src.namespace}/${src.name}\u0000${dst.namespace}/${dst.name}`;
}

/** Responses per (source, destination) from `trafficQuery`'s and `unmeshedTrafficQuery`'s samples. */
export function foldTraffic(kind: Kind, samples: readonly PromSample[]): Map<string, Traffic> {
  const l = kind.label;
  const out = new Map<string, Traffic>();
  for (const s of samples) {
    const m = s.metric;
    if (!(s.value > 0)) continue;
    // An inbound series (unmeshedTrafficQuery's) has no dst_ labels: its workload is the destination.
    const inbound = m[`dst_${l}`] === undefined;
    const src = inbound ? { namespace: "", name: "" } : { namespace: m.namespace ?? "", name: m[l] ?? "" };
    const dst = inbound
      ? { namespace: m.namespace ?? "", name: m[l] ?? "" }
      : { namespace: m.dst_namespace ?? "", name: m[`dst_${l}`] ?? "" };
    const k = key(src, dst);
    const t = out.get(k) ?? { success: 0, failure: 0 };
    if (m.classification === "success") t.success += s.value;
    else t.failure += s.value;
    out.set(k, t);
  }
  return out;
}

export function toneOf(successRate: number | undefined): Tone {
  if (successRate === undefined) return "none";
  return successRate >= GOOD ? "good" : successRate >= WARN ? "warn" : "bad";
}

/** Stroke width grows with the log of the rate, so 1 and 1,000 RPS both stay drawable. */
export function widthOf(rps: number): number {
  return Math.round((1.5 + Math.min(8, 2 * Math.log10(1 + Math.max(0, rps)))) * 10) / 10;
}

function nodeOf(r: Ref): Omit<GraphNode, "x" | "y" | "layer"> {
  if (!r.name) return { id: "(unmeshed)", namespace: "", name: "(unmeshed)", kind: "unmeshed" };
  const kind = r.name.startsWith("sa/")
    ? "serviceaccount"
    : r.name.startsWith("svc/")
    ? "service"
    : "workload";
  return { id: `${r.namespace}/${r.name}`, namespace: r.namespace, name: r.name, kind };
}

/**
 * Layers by longest path from the nodes nobody calls (cycles are cut by bounding the relaxation to one pass
 * per node), then each layer ordered by the mean row of its callers, ties by id: the same input always
 * gives the same picture, so a refresh moves nothing that did not change.
 */
export function layout(
  ids: readonly string[],
  links: readonly { from: string; to: string }[],
): Map<string, { layer: number; row: number }> {
  const sorted = [...ids].sort();
  const layer = new Map(sorted.map((id) => [id, 0]));
  const real = links.filter((e) => e.from !== e.to);
  for (let pass = 0; pass < sorted.length; pass++) {
    let changed = false;
    for (const e of real) {
      const want = (layer.get(e.from) ?? 0) + 1;
      if (want > (layer.get(e.to) ?? 0) && want < sorted.length) {
        layer.set(e.to, want);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const out = new Map<string, { layer: number; row: number }>();
  const maxLayer = Math.max(0, ...layer.values());
  for (let l = 0; l <= maxLayer; l++) {
    const here = sorted.filter((id) => layer.get(id) === l);
    const center = (id: string) => {
      const rows = real.filter((e) => e.to === id && out.has(e.from)).map((e) => out.get(e.from)!.row);
      return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : Infinity;
    };
    const ranked = here.map((id) => ({ id, c: center(id) })).sort((a, b) =>
      a.c === b.c ? a.id.localeCompare(b.id) : a.c - b.c
    );
    ranked.forEach((r, row) => out.set(r.id, { layer: l, row }));
  }
  return out;
}

/** Nodes and edges for the page: `edges` as `collectEdges` returns them, `traffic` from `foldTraffic`. */
export function shapeGraph(
  edges: readonly Edge[],
  traffic: ReadonlyMap<string, Traffic>,
  windowS: number,
): Graph {
  const nodes = new Map<string, Omit<GraphNode, "x" | "y" | "layer">>();
  const out: GraphEdge[] = [];
  for (const e of edges) {
    const a = nodeOf(e.src), b = nodeOf(e.dst);
    nodes.set(a.id, a);
    nodes.set(b.id, b);
    const t = traffic.get(key(e.src, e.dst));
    const total = t ? t.success + t.failure : 0;
    const successRate = total > 0 ? t!.success / total : undefined;
    const tone = toneOf(successRate);
    const rps = total / windowS;
    out.push({
      from: a.id,
      to: b.id,
      rps: Math.round(rps * 1000) / 1000,
      successRate,
      tone,
      failing: tone === "bad" || tone === "warn",
      width: widthOf(rps),
      mtls: e.secured,
      noTlsReason: e.secured ? "" : e.no_tls_reason,
      noTlsText: e.secured ? "" : reasonText(e.no_tls_reason),
      clientId: e.client_id,
      serverId: e.server_id,
    });
  }
  const pos = layout([...nodes.keys()], out);
  let maxRow = 0, maxLayer = 0;
  const placed: GraphNode[] = [...nodes.values()].map((n) => {
    const p = pos.get(n.id)!;
    maxRow = Math.max(maxRow, p.row);
    maxLayer = Math.max(maxLayer, p.layer);
    return { ...n, layer: p.layer, x: MARGIN + p.layer * LAYER_GAP, y: MARGIN / 2 + p.row * ROW_GAP };
  }).sort((a, b) => a.id.localeCompare(b.id));
  return {
    nodes: placed,
    edges: out,
    width: 2 * MARGIN + maxLayer * LAYER_GAP,
    height: MARGIN + maxRow * ROW_GAP + 40,
  };
}

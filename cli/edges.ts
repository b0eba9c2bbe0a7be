/**
 * `weft edges KIND`: who talks to whom, with the identity each side proved. Linkerd's viz Edges reads the
 * clients' open connections; weft reads both sides, so each identity is the one actually seen: the server
 * identity from the client proxy's series (`server_id`), the client identity from the server proxy's
 * (`client_id`), and when a side is not mTLS, the reason its proxy recorded (`no_tls_reason`).
 * Destinations of plain-TCP series (which carry only `target_addr`) and sources known only by identity
 * are put on their workloads through the Kubernetes API (pod IPs, Service IPs, service accounts).
 */
import type { Kube } from "../manifests/kube.ts";
import type { CliContext, Command } from "./context.ts";
import { UsageError } from "./context.ts";
import { CONNECT_FLAGS, contextNamespace, openViews, queryAll } from "./connect.ts";
import { flagHelp, type FlagSpec, parseFlags, parseOutput, parseWindow, windowText } from "./flags.ts";
import { findKind, type Kind, KINDS, listPath } from "./kinds.ts";
import { type ObjectInfo, objectInfo, type PodInfo, podInfo, selects, workloadOf } from "./kube_objects.ts";
import type { PromSample } from "./prometheus.ts";
import { by, type Matcher, selector } from "./promql.ts";
import { type Cell, renderTable, useColor } from "./table.ts";

export const EDGES_FLAGS: readonly FlagSpec[] = [
  { name: "namespace", short: "n", help: "edges with a side in this namespace", default: "the context's" },
  { name: "all-namespaces", short: "A", bool: true, help: "every namespace" },
  {
    name: "time-window",
    short: "t",
    help: "connections and requests seen within this window",
    default: "1m",
  },
  { name: "output", short: "o", help: "table, wide (adds who saw the edge) or json", default: "table" },
  ...CONNECT_FLAGS,
];

export type EdgeQuery = "outHttp" | "outTcpOpen" | "outTcpNew" | "inHttp" | "inTcpOpen" | "inTcpNew";

/** The six series an edge can be seen in: each side's HTTP requests, open connections and new ones. */
export function edgeQueries(kind: Kind, window: string): Record<EdgeQuery, string> {
  const l = kind.label;
  const out: Matcher[] = [{ label: "direction", value: "outbound" }, { label: l, op: "!=", value: "" }];
  const inb: Matcher[] = [{ label: "direction", value: "inbound" }, { label: l, op: "!=", value: "" }];
  const outBy = by([
    "namespace",
    l,
    "dst_namespace",
    `dst_${l}`,
    "target_addr",
    "tls",
    "server_id",
    "no_tls_reason",
  ]);
  const inBy = by(["namespace", l, "client_id", "tls", "no_tls_reason"]);
  const o = selector(out), i = selector(inb);
  // The connection families: only the proxy's side towards the peer (Linkerd's `peer="dst"` outbound and
  // `peer="src"` inbound), never the loopback leg between the app and its own proxy.
  const oTcp = selector([...out, { label: "peer", value: "dst" }]);
  const iTcp = selector([...inb, { label: "peer", value: "src" }]);
  return {
    outHttp: `sum(increase(request_total${o}[${window}])) by ${outBy}`,
    outTcpOpen: `sum(max_over_time(tcp_open_connections${oTcp}[${window}])) by ${outBy}`,
    outTcpNew: `sum(increase(tcp_open_total${oTcp}[${window}])) by ${outBy}`,
    inHttp: `sum(increase(request_total${i}[${window}])) by ${inBy}`,
    inTcpOpen: `sum(max_over_time(tcp_open_connections${iTcp}[${window}])) by ${inBy}`,
    inTcpNew: `sum(increase(tcp_open_total${iTcp}[${window}])) by ${inBy}`,
  };
}

export interface Ref {
  namespace: string;
  name: string;
}

export interface Edge {
  src: Ref;
  dst: Ref;
  /** The client identity the server's proxy saw ("" when none). */
  client_id: string;
  /** The server identity the client's proxy verified ("" when none). */
  server_id: string;
  secured: boolean;
  /** Why a side was not mTLS, as its proxy recorded it. */
  no_tls_reason: string;
  seen_by: ("client" | "server")[];
}

/** How the cluster maps addresses and identities to workloads (built from the API; a plain table in tests). */
export interface Directory {
  /** The workload of a pod IP, or the workloads behind a Service IP whose pods run as the identity's account. */
  byAddress(ip: string, serverId: string): Ref[];
  /** The workloads whose pods run as this identity's service account. */
  byIdentity(id: string): Ref[];
}

/** `sa.ns.serviceaccount.identity.<cp-ns>.<trust-domain>` → {sa, ns}. */
export function parseIdentity(id: string): { serviceAccount: string; namespace: string } | undefined {
  const m = /^([^.]+)\.([^.]+)\.serviceaccount\.identity\./.exec(id);
  return m ? { serviceAccount: m[1], namespace: m[2] } : undefined;
}

const REASONS: Record<string, string> = {
  disabled: "mTLS disabled",
  loopback: "loopback",
  no_authority_in_http_request: "no authority in the HTTP request",
  not_http: "not HTTP",
  not_provided_by_remote: "the client sent no identity",
  no_tls_from_remote: "the client sent no identity",
  not_provided_by_service_discovery: "the destination is not meshed (no identity from discovery)",
};

export function reasonText(r: string): string {
  return REASONS[r] ?? (r || "not mTLS");
}

function ipOf(targetAddr: string): string {
  const i = targetAddr.lastIndexOf(":");
  const ip = i < 0 ? targetAddr : targetAddr.slice(0, i);
  return ip.startsWith("[") ? ip.slice(1, -1) : ip;
}

/** Folds both sides' series into edges; only series with a non-zero value count. */
export function foldEdges(kind: Kind, results: Record<EdgeQuery, PromSample[]>, dir: Directory): Edge[] {
  const l = kind.label;
  const edges = new Map<string, Edge>();
  const edge = (src: Ref, dst: Ref) => {
    const k = `${src.namespace}/${src.name}\u0000${dst.namespace}/${dst.name}`;
    let e = edges.get(k);
    if (!e) {
      edges.set(
        k,
        e = { src, dst, client_id: "", server_id: "", secured: true, no_tls_reason: "", seen_by: [] },
      );
    }
    return e;
  };
  const note = (e: Edge, side: "client" | "server", m: Record<string, string>) => {
    if (!e.seen_by.includes(side)) e.seen_by.push(side);
    if (m.tls !== "true") {
      e.secured = false;
      if (!e.no_tls_reason) e.no_tls_reason = m.no_tls_reason || m.tls || "";
    }
  };
  for (const q of ["outHttp", "outTcpOpen", "outTcpNew"] as const) {
    for (const s of results[q]) {
      if (!(s.value > 0)) continue;
      const m = s.metric;
      const src = { namespace: m.namespace ?? "", name: m[l] ?? "" };
      const dsts: Ref[] = m[`dst_${l}`]
        ? [{ namespace: m.dst_namespace ?? "", name: m[`dst_${l}`] }]
        : m.target_addr
        ? dir.byAddress(ipOf(m.target_addr), m.server_id ?? "")
        : [];
      for (const dst of dsts) {
        const e = edge(src, dst);
        note(e, "client", m);
        if (m.server_id) e.server_id = m.server_id;
      }
    }
  }
  for (const q of ["inHttp", "inTcpOpen", "inTcpNew"] as const) {
    for (const s of results[q]) {
      if (!(s.value > 0)) continue;
      const m = s.metric;
      const dst = { namespace: m.namespace ?? "", name: m[l] ?? "" };
      // An unidentified client cannot be put on a workload: it shows as one "unmeshed" source.
      let srcs = m.client_id ? dir.byIdentity(m.client_id) : [{ namespace: "", name: "" }];
      if (srcs.length === 0) {
        // A proven identity whose pods are gone (or not of this kind): named by its service account.
        const who = parseIdentity(m.client_id);
        srcs = [{ namespace: who?.namespace ?? "", name: who ? `sa/${who.serviceAccount}` : m.client_id }];
      }
      for (const src of srcs) {
        const e = edge(src, dst);
        note(e, "server", m);
        if (m.client_id) e.client_id = m.client_id;
      }
    }
  }
  return [...edges.values()].sort((a, b) =>
    `${a.src.namespace}/${a.dst.namespace}/${a.src.name}/${a.dst.name}`.localeCompare(
      `${b.src.namespace}/${b.dst.namespace}/${b.src.name}/${b.dst.name}`,
    )
  );
}

/** A Directory over listed pods and Services, naming workloads of a kind. */
export function directory(kind: Kind, pods: readonly PodInfo[], services: readonly ObjectInfo[]): Directory {
  const name = (p: PodInfo): Ref => {
    if (kind.label === "pod") return { namespace: p.namespace, name: p.name };
    const w = workloadOf(p);
    return { namespace: p.namespace, name: w.kind === kind.label ? w.name : "" };
  };
  const uniq = (refs: Ref[]) => {
    const seen = new Map(refs.filter((r) => r.name).map((r) => [`${r.namespace}/${r.name}`, r]));
    return [...seen.values()];
  };
  const live = pods.filter((p) => p.phase === "Running" || p.phase === "Pending");
  return {
    byAddress(ip, serverId) {
      const pod = live.filter((p) => p.ip === ip);
      if (pod.length > 0) return uniq(pod.map(name));
      const svc = services.find((s) => s.clusterIPs?.includes(ip));
      if (!svc) return [];
      const id = parseIdentity(serverId);
      const behind = live.filter((p) =>
        p.namespace === svc.namespace && svc.serviceSelector && Object.keys(svc.serviceSelector).length > 0 &&
        selects({ matchLabels: svc.serviceSelector }, p.labels) &&
        (!id || (p.serviceAccount === id.serviceAccount && p.namespace === id.namespace))
      );
      const refs = uniq(behind.map(name));
      return refs.length > 0 ? refs : [{ namespace: svc.namespace, name: `svc/${svc.name}` }];
    },
    byIdentity(id) {
      const who = parseIdentity(id);
      if (!who) return [];
      return uniq(
        live.filter((p) => p.namespace === who.namespace && p.serviceAccount === who.serviceAccount).map(
          name,
        ),
      );
    },
  };
}

export function renderEdges(edges: readonly Edge[], wide: boolean, color: boolean): string {
  const rows = edges.map((e): (string | Cell)[] => [
    e.src.name || "(unmeshed)",
    e.dst.name,
    e.src.namespace || "-",
    e.dst.namespace,
    e.secured ? { text: "√", tone: "good" } : { text: `× ${reasonText(e.no_tls_reason)}`, tone: "bad" },
    e.client_id || "-",
    e.server_id || "-",
    ...(wide ? [e.seen_by.join("+")] : []),
  ]);
  return renderTable(
    ["SRC", "DST", "SRC_NS", "DST_NS", "SECURED", "CLIENT_ID", "SERVER_ID", ...(wide ? ["SEEN_BY"] : [])],
    rows,
    color,
  );
}

// deno-lint-ignore no-explicit-any
type Json = any;

async function listDirectory(kube: Kube, kind: Kind): Promise<Directory> {
  const pk = KINDS.find((k) => k.label === "pod")!;
  const sk = KINDS.find((k) => k.label === "service")!;
  const [pods, svcs] = await Promise.all([
    kube.list<Json>(listPath(pk, undefined)),
    kube.list<Json>(listPath(sk, undefined)),
  ]);
  return directory(kind, pods.map(podInfo), svcs.map(objectInfo));
}

export async function collectEdges(
  kind: Kind,
  namespace: string | undefined,
  windowS: number,
  views: Awaited<ReturnType<typeof openViews>>,
  ctx: CliContext,
): Promise<Edge[]> {
  const [results, dir] = await Promise.all([
    queryAll(views.prom, edgeQueries(kind, windowText(windowS)), ctx),
    listDirectory(views.kube, kind),
  ]);
  return foldEdges(kind, results, dir).filter((e) =>
    e.dst.name && (!namespace || e.src.namespace === namespace || e.dst.namespace === namespace)
  );
}

export const edgesCommand: Command = {
  name: "edges",
  summary: "source → destination per workload with client and server identities, and why an edge is not mTLS",
  async run(args, ctx) {
    const f = parseFlags(args, EDGES_FLAGS);
    if (f.help) {
      await ctx.out(
        `usage: weft edges KIND [flags]   (KIND: deploy, po, sts, ds, job)\n\n${flagHelp(EDGES_FLAGS)}\n`,
      );
      return 0;
    }
    const [what = "deploy", extra] = f.positionals;
    if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
    const kind = findKind(what);
    if (kind.label === "service" || kind.label === "namespace") {
      throw new UsageError(`edges are between workloads or pods, not ${kind.label}s`);
    }
    const windowS = parseWindow(f.values.get("time-window") ?? "1m", "--time-window");
    const output = parseOutput(f.values.get("output"));
    const views = await openViews(f, ctx);
    const ns = f.bools.has("all-namespaces")
      ? undefined
      : f.values.get("namespace") ?? contextNamespace(views.kube);
    const edges = await collectEdges(kind, ns, windowS, views, ctx);
    if (output === "json") {
      await ctx.out(JSON.stringify(edges, null, 2) + "\n");
      return 0;
    }
    if (edges.length === 0) {
      ctx.err(`no edges seen in the last ${windowText(windowS)}${ns ? ` in namespace ${ns}` : ""}`);
      return 0;
    }
    await ctx.out(renderEdges(edges, output === "wide", useColor(ctx.stdoutIsTty, ctx.env)));
    return 0;
  },
};

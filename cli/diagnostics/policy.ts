/**
 * `weft diagnostics policy`: the inbound policy a pod's proxy gets for one of its ports
 * (InboundServerPolicies.WatchPort) and the outbound policy a proxy gets for a Service address
 * (OutboundPolicies.Watch), printed as the server, its authorizations and its routes.
 */
import type { OutboundPolicy, Server } from "../../proxy/discovery/requests.ts";
import { fromIpAddress } from "../../proto/ip.ts";
import { renderTable } from "../table.ts";

type Meta = { kind?: { $case: "default"; value: string } | { $case: "resource"; value: ResourceMeta } };
interface ResourceMeta {
  group: string;
  kind: string;
  name: string;
  namespace: string;
}
type Authz = Server["authorizations"][number];
type Network = Authz["networks"][number];
type Duration = { seconds: bigint; nanos: number } | undefined;

export function metaText(m: Meta | undefined): string {
  const k = m?.kind;
  if (k?.$case === "default") return `default:${k.value}`;
  if (k?.$case === "resource") {
    const ns = k.value.namespace ? `${k.value.namespace}/` : "";
    return `${k.value.kind.toLowerCase()}/${ns}${k.value.name}`;
  }
  return "-";
}

function netText(n: { ip?: Parameters<typeof fromIpAddress>[0]; prefixLen: number } | undefined): string {
  return n?.ip ? `${fromIpAddress(n.ip)}/${n.prefixLen}` : "?";
}

function networksText(ns: Network[]): string {
  if (ns.length === 0) return "-";
  return ns.map((n) => netText(n.net) + (n.except.length ? ` except ${n.except.map(netText).join(" ")}` : ""))
    .join(", ");
}

export function authnText(a: Authz["authentication"]): string {
  const p = a?.permit;
  if (p?.$case === "unauthenticated") return "unauthenticated";
  if (p?.$case === "meshTLS") {
    const c = p.value.clients;
    if (c?.$case === "unauthenticated") return "meshTLS: any identity";
    if (c?.$case === "identities") {
      const ids = [
        ...c.value.identities.map((i) => i.name),
        ...c.value.suffixes.map((s) => s.parts.length ? `*.${s.parts.join(".")}` : "*"),
      ];
      return `meshTLS: ${ids.join(", ") || "(none)"}`;
    }
  }
  return "?";
}

/** The authorization's name as the proxy reports it in metrics (metadata, or the legacy labels). */
export function authzName(a: Authz): string {
  const m = metaText(a.metadata);
  if (m !== "-") return m;
  return a.labels.name ? `${(a.labels.kind ?? "authorization").toLowerCase()}/${a.labels.name}` : "-";
}

function durationText(d: Duration): string {
  return d ? `${Number(d.seconds) + d.nanos / 1e9}s` : "-";
}

type InboundHttpRoute = {
  metadata?: Meta;
  authorizations: Authz[];
  rules: { matches: unknown[] }[];
};

function inboundProtocol(s: Server): { text: string; routes: InboundHttpRoute[] } {
  const k = s.protocol?.kind;
  switch (k?.$case) {
    case "detect":
      return { text: `detect (timeout ${durationText(k.value.timeout)})`, routes: k.value.httpRoutes };
    case "http1":
    case "http2":
      return { text: k.$case, routes: k.value.routes };
    case "grpc":
      return { text: "grpc", routes: k.value.routes };
    case "opaque":
    case "tls":
      return { text: k.$case, routes: [] };
    default:
      return { text: "?", routes: [] };
  }
}

export interface InboundSummary {
  server: string;
  protocol: string;
  authorizations: { name: string; networks: string; authentication: string }[];
  routes: { name: string; authorizations: string[] }[];
}

export function inboundSummary(s: Server): InboundSummary {
  const server = s.labels.name ? `${s.labels.kind ?? "server"}/${s.labels.name}` : "-";
  const p = inboundProtocol(s);
  const authz = (a: Authz) => ({
    name: authzName(a),
    networks: networksText(a.networks),
    authentication: authnText(a.authentication),
  });
  return {
    server,
    protocol: p.text,
    authorizations: s.authorizations.map(authz),
    routes: p.routes.map((r) => ({
      name: metaText(r.metadata),
      authorizations: r.authorizations.map(authzName),
    })),
  };
}

export function renderInbound(target: string, port: number, s: Server): string {
  const sum = inboundSummary(s);
  const out = [
    `inbound policy of ${target} port ${port}`,
    `server:   ${sum.server}`,
    `protocol: ${sum.protocol}`,
    "",
    sum.authorizations.length === 0 ? "no server-wide authorizations\n" : renderTable(
      ["AUTHORIZATION", "NETWORKS", "AUTHENTICATION"],
      sum.authorizations.map((a) => [a.name, a.networks, a.authentication]),
    ),
  ];
  if (sum.routes.length > 0) {
    out.push(renderTable(
      ["ROUTE", "ROUTE AUTHORIZATIONS"],
      sum.routes.map((r) => [r.name, r.authorizations.join(", ") || "-"]),
    ));
  }
  return out.join("\n");
}

type OutboundRoute = {
  metadata?: Meta;
  rules: { backends?: { kind?: { $case: string; value: unknown } } }[];
};
type Backend = { metadata?: Meta; kind?: { $case: string; value: unknown } };

function backendText(b: Backend | undefined): string {
  if (!b) return "?";
  const k = b.kind;
  let where = "";
  if (k?.$case === "balancer") {
    const d = (k.value as { discovery?: { kind?: { $case: "dst"; value: { path: string } } } }).discovery;
    where = d?.kind ? ` (${d.kind.value.path})` : "";
  } else if (k?.$case === "forward") where = " (forward)";
  return metaText(b.metadata) + where;
}

function routeBackends(r: OutboundRoute): string[] {
  const out: string[] = [];
  for (const rule of r.rules) {
    const d = rule.backends?.kind;
    if (!d || d.$case === "empty") continue;
    const list = (d.value as { backends: { backend?: { backend?: Backend } | Backend; weight?: number }[] })
      .backends;
    for (const b of list) {
      // Route backends wrap the Backend one level deeper in HTTP/gRPC than in opaque/TLS routes.
      const inner = (b.backend && "backend" in b.backend ? b.backend.backend : b.backend) as
        | Backend
        | undefined;
      out.push(backendText(inner) + (b.weight !== undefined ? ` w=${b.weight}` : ""));
    }
  }
  return out;
}

function outboundRoutes(p: OutboundPolicy): { protocol: string; routes: OutboundRoute[] } {
  const k = p.protocol?.kind;
  switch (k?.$case) {
    case "detect": {
      const http = k.value.http1?.routes ?? [];
      return { protocol: `detect (timeout ${durationText(k.value.timeout)})`, routes: http };
    }
    case "http1":
    case "http2":
    case "grpc":
    case "opaque":
    case "tls":
      return { protocol: k.$case, routes: k.value.routes as OutboundRoute[] };
    default:
      return { protocol: "?", routes: [] };
  }
}

export function renderOutbound(target: string, p: OutboundPolicy): string {
  const r = outboundRoutes(p);
  return [
    `outbound policy for ${target}`,
    `resource: ${metaText(p.metadata)}`,
    `protocol: ${r.protocol}`,
    "",
    r.routes.length === 0 ? "no routes\n" : renderTable(
      ["ROUTE", "BACKENDS"],
      r.routes.map((x) => [metaText(x.metadata), routeBackends(x).join(", ") || "-"]),
    ),
  ].join("\n");
}

/**
 * `weft diagnostics endpoints`: what Destination.Get answers for an authority, reduced with the
 * proxy's own reducer, so the table lists exactly the endpoints a proxy would balance over.
 */
import { type EndpointSet, reduceDestination } from "../../proxy/discovery/clients.ts";
import type { Update } from "../../proxy/discovery/requests.ts";
import { renderTable } from "../table.ts";
import { UsageError } from "../context.ts";

/** `name:port` or `ip:port`; the port is required, as the proxy always asks with one. */
export function parseAuthority(text: string): { host: string; port: number } {
  const m = text.match(/^(\[[0-9a-fA-F:.]+\]|[^:\s/]+):(\d{1,5})$/);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port < 1 || port > 65535) {
    throw new UsageError(
      `"${text}" is not an authority: use NAME:PORT (e.g. web.default.svc.cluster.local:80)`,
    );
  }
  return { host: m[1], port };
}

export function endpointSet(updates: Update[]): EndpointSet {
  let set: EndpointSet | undefined;
  for (const u of updates) set = reduceDestination(set, u);
  return set ?? { exists: false, endpoints: new Map() };
}

export interface EndpointRow {
  authority: string;
  namespace: string;
  ip: string;
  port: number;
  pod: string;
  service: string;
  identity: string;
}

export function endpointRows(authority: string, set: EndpointSet): EndpointRow[] {
  return [...set.endpoints.values()].map((e) => ({
    authority,
    namespace: e.metricLabels.namespace ?? "",
    ip: e.ip,
    port: e.port,
    pod: e.metricLabels.pod ?? "",
    service: e.metricLabels.service ?? "",
    identity: e.identity?.name ?? "",
  })).sort((a, b) => a.ip.localeCompare(b.ip, "en", { numeric: true }) || a.port - b.port);
}

export function renderEndpoints(rows: EndpointRow[], missing: string[]): string {
  const table = renderTable(
    ["AUTHORITY", "NAMESPACE", "IP", "PORT", "POD", "SERVICE", "IDENTITY"],
    rows.map((r) => [r.authority, r.namespace, r.ip, String(r.port), r.pod, r.service, r.identity || "-"]),
  );
  const notes = missing.map((a) => `${a}: no endpoints\n`).join("");
  return (rows.length > 0 ? table : "") + notes;
}

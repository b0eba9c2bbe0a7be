/**
 * The demo's figures, computed from two scrapes a window apart: per service, from its server pods' proxies
 * (inbound, from the expected caller's identity) and, where a load client calls it, from what that client saw.
 * Pure functions of the scrapes, so what is printed is exactly what the metrics say.
 */
import { bucketDelta, buckets, type Match, quantile, type Sample, sum } from "../e2e/lib/prom.ts";

/** A scrape of one pod: its proxy's metrics (undefined when it has no proxy) and its app's (load clients). */
export interface PodScrape {
  pod: string;
  proxy?: Sample[];
  proxyError?: string;
  app?: Sample[];
}

export interface ServiceSpec {
  name: string;
  protocol: "HTTP/1" | "gRPC" | "TCP";
  /** Server pods' app label. */
  app: string;
  port: number;
  /** Who calls it: the caller's app label and its mesh identity. */
  callerApp: string;
  callerIdentity: string;
  serverIdentity: string;
  /** The caller is a demo load client whose own counters can be read. */
  callerIsLoadClient: boolean;
  /**
   * Without proxies, the service whose load client's successes each include one successful call to this one
   * (web answers 200 only after api answered 200).
   */
  impliedBy?: string;
}

export interface ProxyHttpFigures {
  requests: number;
  successes: number;
  rps: number;
  successRate: number | undefined;
  p50Ms: number | undefined;
  p99Ms: number | undefined;
}

export interface TcpFigures {
  /** Connections opened in the window from the caller's identity (long-lived connections may open none). */
  connections: number;
  readBytes: number;
  writeBytes: number;
  /** Bytes in the window on inbound connections that were not mTLS from the caller, on this port. */
  plaintextBytes: number;
  /** Connections closed with an error in the window. */
  errors: number;
  perPodBytes: Record<string, number>;
}

export interface ServiceReport {
  name: string;
  protocol: string;
  windowS: number;
  meshed: boolean;
  /** Why proxy figures are missing, when they are. */
  proxyNote?: string;
  /** From response_total / response_latency_ms on the servers' proxies, when the proxy exports them. */
  http?: ProxyHttpFigures;
  tcp?: TcpFigures;
  mtls?: { callerId: string; serverId: string; inboundFromCaller: boolean; outboundToServer: boolean };
  client?: {
    requests: number;
    successes: number;
    rps: number;
    p50Ms?: number;
    p99Ms?: number;
    skipped: number;
  };
  ok: boolean;
  problems: string[];
}

function delta(after: Sample[] | undefined, before: Sample[] | undefined, name: string, m: Match): number {
  if (!after) return 0;
  const a = sum(after, name, m);
  const b = before ? sum(before, name, m) : 0;
  return a >= b ? a - b : a;
}

const onPort = (port: number) => (v: string | undefined) => v?.endsWith(`:${port}`) ?? false;

export function serviceReport(
  spec: ServiceSpec,
  before: Map<string, PodScrape>,
  after: Map<string, PodScrape>,
  servers: string[],
  callers: string[],
  windowS: number,
  impliedCallers: string[] = [],
): ServiceReport {
  const r: ServiceReport = {
    name: spec.name,
    protocol: spec.protocol,
    windowS,
    meshed: false,
    ok: true,
    problems: [],
  };
  const withProxy = servers.filter((p) => after.get(p)?.proxy);
  r.meshed = withProxy.length > 0;
  if (!r.meshed) {
    const why = servers.map((p) => after.get(p)?.proxyError).find((e) => e);
    r.proxyNote = `no proxy metrics from the ${spec.name} pods${why ? ` (${why})` : ""}: not meshed`;
  } else {
    const fromCaller: Match = { direction: "inbound", tls: "true", client_id: spec.callerIdentity };
    // A raw TCP service is judged by its connections; HTTP and gRPC by the proxies' request metrics.
    const hasHttp = spec.protocol !== "TCP" &&
      withProxy.some((p) => after.get(p)!.proxy!.some((s) => s.name === "response_total"));
    if (hasHttp) {
      let requests = 0, successes = 0;
      let lat = new Map<number, number>();
      for (const p of withProxy) {
        const a = after.get(p)!.proxy, b = before.get(p)?.proxy;
        requests += delta(a, b, "response_total", fromCaller);
        successes += delta(a, b, "response_total", { ...fromCaller, classification: "success" });
        const d = bucketDelta(
          buckets(a!, "response_latency_ms", fromCaller),
          buckets(b ?? [], "response_latency_ms", fromCaller),
        );
        for (const [le, v] of d) lat.set(le, (lat.get(le) ?? 0) + v);
      }
      if (lat.size === 0) lat = new Map();
      r.http = {
        requests,
        successes,
        rps: requests / windowS,
        successRate: requests > 0 ? successes / requests : undefined,
        p50Ms: quantile(0.5, lat),
        p99Ms: quantile(0.99, lat),
      };
      if (successes === 0) {
        r.problems.push(`no successful responses from ${spec.callerApp} in the proxies' metrics`);
      }
    } else {
      r.proxyNote =
        "the proxies export no HTTP metrics (response_total) yet: request rate, success rate and " +
        "latency below come from TCP metrics and from the load client, not from the proxy";
    }
    const tcp: TcpFigures = {
      connections: 0,
      readBytes: 0,
      writeBytes: 0,
      plaintextBytes: 0,
      errors: 0,
      perPodBytes: {},
    };
    const portMatch: Match = { direction: "inbound", target_addr: onPort(spec.port) };
    for (const p of withProxy) {
      const a = after.get(p)!.proxy, b = before.get(p)?.proxy;
      tcp.connections += delta(a, b, "tcp_open_total", fromCaller);
      const read = delta(a, b, "tcp_read_bytes_total", fromCaller);
      const write = delta(a, b, "tcp_write_bytes_total", fromCaller);
      tcp.readBytes += read;
      tcp.writeBytes += write;
      tcp.perPodBytes[p] = read + write;
      const allOnPort = delta(a, b, "tcp_read_bytes_total", portMatch) +
        delta(a, b, "tcp_write_bytes_total", portMatch);
      const mtlsOnPort = delta(a, b, "tcp_read_bytes_total", { ...portMatch, tls: "true" }) +
        delta(a, b, "tcp_write_bytes_total", { ...portMatch, tls: "true" });
      tcp.plaintextBytes += allOnPort - mtlsOnPort;
      tcp.errors += delta(a, b, "tcp_close_total", {
        ...fromCaller,
        errno: (v) => v !== undefined && v !== "",
      });
    }
    r.tcp = tcp;
    // HTTP connections between proxies are long-lived and multiplexed (their bytes now show at each scrape,
    // but a window may still carry none), so for HTTP the mTLS evidence is the request metrics' identities.
    const httpFromCaller = (r.http?.requests ?? 0) > 0;
    if (!httpFromCaller && (tcp.readBytes === 0 || tcp.writeBytes === 0)) {
      r.problems.push(
        `no mTLS bytes both ways from ${spec.callerIdentity} in the ${spec.name} proxies' metrics`,
      );
    }
    const outbound = callers.some((c) =>
      (after.get(c)?.proxy ?? []).some((s) =>
        (s.name === "tcp_open_total" || s.name === "request_total") && s.labels.direction === "outbound" &&
        s.labels.tls === "true" && s.labels.server_id === spec.serverIdentity
      )
    );
    r.mtls = {
      callerId: spec.callerIdentity,
      serverId: spec.serverIdentity,
      inboundFromCaller: httpFromCaller || tcp.readBytes > 0,
      outboundToServer: outbound,
    };
    if (!outbound) {
      r.problems.push(`the ${spec.callerApp} proxies show no mTLS connection to ${spec.serverIdentity}`);
    }
  }
  // Client-side figures: the service's own load client, or without proxies the one whose successes imply it.
  const implied = !r.meshed && !spec.callerIsLoadClient && spec.impliedBy !== undefined;
  if (implied) {
    r.proxyNote +=
      `; its only figures are the ${spec.impliedBy} load client's below, each success of which ` +
      `included one successful ${spec.name} call`;
  }
  if (spec.callerIsLoadClient || implied) {
    const loadPods = implied ? impliedCallers : callers;
    let requests = 0, successes = 0, skipped = 0;
    const lat = new Map<number, number>();
    for (const c of loadPods) {
      const a = after.get(c)?.app, b = before.get(c)?.app;
      successes += delta(a, b, "demo_client_requests_total", { result: "success" });
      requests += delta(a, b, "demo_client_requests_total", {
        result: (v) => v === "success" || v === "failure",
      });
      skipped += delta(a, b, "demo_client_requests_total", { result: "skipped" });
      for (
        const [le, v] of bucketDelta(
          buckets(a ?? [], "demo_client_latency_ms"),
          buckets(b ?? [], "demo_client_latency_ms"),
        )
      ) {
        lat.set(le, (lat.get(le) ?? 0) + v);
      }
    }
    r.client = {
      requests,
      successes,
      skipped,
      rps: requests / windowS,
      p50Ms: quantile(0.5, lat),
      p99Ms: quantile(0.99, lat),
    };
    if (successes === 0) r.problems.push(`the load client saw no successful request in ${windowS} s`);
  }
  r.ok = r.problems.length === 0;
  return r;
}

const pct = (x: number | undefined) => x === undefined ? "n/a" : `${(x * 100).toFixed(1)}%`;
const ms = (x: number | undefined) => x === undefined ? "n/a" : `${x.toFixed(1)} ms`;

/** Human-readable lines for one service. */
export function formatReport(r: ServiceReport): string[] {
  const lines = [`${r.ok ? "OK  " : "FAIL"} ${r.name} (${r.protocol}), ${r.windowS} s window`];
  if (r.proxyNote) lines.push(`     note: ${r.proxyNote}`);
  if (r.http) {
    lines.push(
      `     proxy:  ${r.http.rps.toFixed(2)} req/s, success ${
        pct(r.http.successRate)
      } (${r.http.successes}/${r.http.requests}), ` +
        `p50 ${ms(r.http.p50Ms)}, p99 ${ms(r.http.p99Ms)}`,
    );
  }
  if (r.tcp) {
    const pods = Object.entries(r.tcp.perPodBytes).map(([p, b]) => `${p}=${b}`).join(", ");
    lines.push(
      `     tcp:    ${r.tcp.connections} new connections, ${r.tcp.readBytes} B in / ${r.tcp.writeBytes} B out ` +
        `over mTLS, ${r.tcp.errors} closed with errors; per pod bytes: ${pods}`,
    );
    if (r.tcp.plaintextBytes > 0) {
      lines.push(
        `            ${r.tcp.plaintextBytes} B plaintext on the port (kubelet probes and unmeshed callers)`,
      );
    }
  }
  if (r.mtls) {
    lines.push(
      `     mTLS:   client_id=${r.mtls.callerId} ${
        r.mtls.inboundFromCaller ? "seen" : "NOT seen"
      } at the server; ` +
        `server_id=${r.mtls.serverId} ${r.mtls.outboundToServer ? "seen" : "NOT seen"} at the caller`,
    );
  }
  if (r.client) {
    lines.push(
      `     client: ${r.client.rps.toFixed(2)} req/s, success ${
        pct(r.client.requests ? r.client.successes / r.client.requests : undefined)
      } ` +
        `(${r.client.successes}/${r.client.requests}), p50 ${ms(r.client.p50Ms)}, p99 ${ms(r.client.p99Ms)}` +
        (r.client.skipped ? `, ${r.client.skipped} ticks skipped (in-flight cap)` : "") +
        " (as the load client saw it)",
    );
  }
  for (const p of r.problems) lines.push(`     problem: ${p}`);
  return lines;
}

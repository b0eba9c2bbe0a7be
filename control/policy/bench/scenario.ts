/**
 * The benchmark's cluster: `apps` applications over `namespaces` namespaces, each with pods (three
 * container ports), a Service and five policy resources (Server, MeshTLSAuthentication,
 * AuthorizationPolicy, an inbound HTTPRoute on the Server, a Gateway HTTPRoute on the Service);
 * the streams proxies would open on it; and a churn that rewrites one route per change. Every route
 * carries a `rev-N` path prefix, so a client can tell from the bytes which change a message reflects.
 */
import { Buffer } from "node:buffer";
import { PortSpec } from "../../../proto/gen/inbound.ts";
import { TrafficSpec } from "../../../proto/gen/outbound.ts";
import { toTcpAddress } from "../../../proto/ip.ts";
import type { Kind, Obj } from "../resources.ts";
import { authorizationPolicy, httpRoute, meshTls, namespace, pod, server, service } from "../testing.ts";

export interface ScenarioSize {
  namespaces: number;
  apps: number;
  podsPerApp: number;
  /** Outbound streams per Service, from clients in different namespaces. */
  outPerSvc: number;
}

export const POLICY_RESOURCES_PER_APP = 5;
const PORTS = [8080, 9090, 9990];
export const INBOUND_PATH = "/io.linkerd.proxy.inbound.InboundServerPolicies/WatchPort";
export const OUTBOUND_PATH = "/io.linkerd.proxy.outbound.OutboundPolicies/Watch";

export interface BenchStream {
  id: number;
  path: string;
  req: string;
  /** The group of streams one change updates, or -1 for a stream no change touches. */
  group: number;
}

export interface Change {
  rev: number;
  group: number;
  /** Streams the change updates. */
  fanout: number;
  kind: Kind;
  object: Obj;
}

const nsOf = (s: ScenarioSize, i: number) => `ns-${i % s.namespaces}`;
const appOf = (s: ScenarioSize, i: number) => `app-${Math.floor(i / s.namespaces)}`;
const svcOf = (s: ScenarioSize, i: number) => `svc-${Math.floor(i / s.namespaces)}`;
const clusterIp = (i: number) => `10.96.${Math.floor(i / 250)}.${(i % 250) + 1}`;
const inGroup = (i: number) => 2 * i;
const outGroup = (i: number) => 2 * i + 1;

function inboundRoute(s: ScenarioSize, i: number, rev: number): Obj {
  const app = appOf(s, i);
  return httpRoute(nsOf(s, i), `${app}-route`, {
    parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: `${app}-http` }],
    rules: [{ matches: [{ path: { type: "PathPrefix", value: `/rev-${rev}` } }] }],
  });
}

function outboundRoute(s: ScenarioSize, i: number, rev: number): Obj {
  const svc = svcOf(s, i);
  return httpRoute(nsOf(s, i), `${svc}-route`, {
    parentRefs: [{ kind: "Service", name: svc, port: 80 }],
    rules: [{
      matches: [{ path: { type: "PathPrefix", value: `/rev-${rev}` } }],
      backendRefs: [{ name: svc, port: 80 }],
    }],
  });
}

/** Every object of the cluster, in an order informers could deliver them. */
export function* objects(s: ScenarioSize): Generator<{ kind: Kind; object: Obj }> {
  for (let n = 0; n < s.namespaces; n++) yield { kind: "Namespace", object: namespace(`ns-${n}`) };
  const containers = [{
    name: "app",
    ports: [
      { name: "http", containerPort: PORTS[0] },
      { name: "grpc", containerPort: PORTS[1] },
      { name: "admin", containerPort: PORTS[2] },
    ],
    readinessProbe: { httpGet: { path: "/ready", port: "admin" } },
  }];
  for (let i = 0; i < s.apps; i++) {
    const ns = nsOf(s, i), app = appOf(s, i), svc = svcOf(s, i);
    for (let p = 0; p < s.podsPerApp; p++) {
      const ip = `10.${1 + Math.floor(i / 250)}.${i % 250}.${p + 1}`;
      yield { kind: "Pod", object: pod(ns, `${app}-${p}`, { app }, { containers, ip }) };
    }
    yield { kind: "Service", object: service(ns, svc, { clusterIP: clusterIp(i), ports: [{ port: 80 }] }) };
    yield {
      kind: "Server",
      object: server(ns, `${app}-http`, { podSelector: { matchLabels: { app } }, port: "http" }),
    };
    yield {
      kind: "MeshTLSAuthentication",
      object: meshTls(ns, `${app}-clients`, {
        identities: [`*.${ns}.serviceaccount.identity.linkerd.cluster.local`],
      }),
    };
    yield {
      kind: "AuthorizationPolicy",
      object: authorizationPolicy(ns, `${app}-authz`, {
        targetRef: { group: "policy.linkerd.io", kind: "Server", name: `${app}-http` },
        requiredAuthenticationRefs: [{
          group: "policy.linkerd.io",
          kind: "MeshTLSAuthentication",
          name: `${app}-clients`,
        }],
      }),
    };
    yield { kind: "HTTPRoute", object: inboundRoute(s, i, 0) };
    yield { kind: "GatewayHTTPRoute", object: outboundRoute(s, i, 0) };
  }
}

export function policyResources(s: ScenarioSize): number {
  return s.apps * POLICY_RESOURCES_PER_APP;
}

/** The streams: WatchPort for each pod's three ports, Watch for each Service from `outPerSvc` clients. */
export function streams(s: ScenarioSize): BenchStream[] {
  const out: BenchStream[] = [];
  const b64 = (u: Uint8Array) => Buffer.from(u).toString("base64");
  for (let i = 0; i < s.apps; i++) {
    for (let p = 0; p < s.podsPerApp; p++) {
      for (const port of PORTS) {
        const req = PortSpec.encode({ workload: `${nsOf(s, i)}:${appOf(s, i)}-${p}`, port }).finish();
        out.push({
          id: out.length,
          path: INBOUND_PATH,
          req: b64(req),
          group: port === PORTS[0] ? inGroup(i) : -1,
        });
      }
    }
    for (let k = 0; k < s.outPerSvc; k++) {
      const req = TrafficSpec.encode({
        sourceWorkload: `ns-${(i + k) % s.namespaces}:client-${k}`,
        target: { $case: "addr", value: toTcpAddress(clusterIp(i), 80) },
      }).finish();
      out.push({ id: out.length, path: OUTBOUND_PATH, req: b64(req), group: outGroup(i) });
    }
  }
  return out;
}

/** Change `c` (0-based): alternately an app's inbound route and a Service's route, `rev` c + 1. */
export function change(s: ScenarioSize, c: number): Change {
  const i = Math.floor(c / 2) % s.apps, rev = c + 1;
  return c % 2 === 0
    ? { rev, group: inGroup(i), fanout: s.podsPerApp, kind: "HTTPRoute", object: inboundRoute(s, i, rev) }
    : {
      rev,
      group: outGroup(i),
      fanout: s.outPerSvc,
      kind: "GatewayHTTPRoute",
      object: outboundRoute(s, i, rev),
    };
}

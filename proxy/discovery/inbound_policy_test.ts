import assert from "node:assert/strict";
import { Registry } from "../metrics/registry.ts";
import type { Authz, HttpRoute, Server } from "../../proto/gen_messages/inbound.ts";
import { toIpAddress } from "../../proto/ip.ts";
import { seededRng } from "../core/rng.ts";
import { request } from "../route/testing.ts";
import { authorize } from "../inbound/authorize.ts";
import { HttpAuthorizer } from "../inbound/http/authorize.ts";
import { InboundPolicyMetrics } from "../metrics/policy_metrics.ts";
import { metric } from "../testing/poll.ts";
import { compileInboundPortOrDeny, inboundPolicyReducer, type InboundPortPolicy } from "./clients.ts";
import { type OpenStream, SharedWatch } from "./shared_watch.ts";

const everywhere = [
  { net: { ip: toIpAddress("0.0.0.0"), prefixLen: 0 }, except: [] },
  { net: { ip: toIpAddress("::"), prefixLen: 0 }, except: [] },
];
const allowAll: Authz = {
  networks: everywhere,
  authentication: { permit: { $case: "unauthenticated", value: {} } },
  labels: {},
  metadata: { kind: { $case: "default", value: "all" } },
};
const meta = { kind: { $case: "default" as const, value: "r" } };
const route = (
  rule: Partial<HttpRoute["rules"][number]> = {},
  extra: Partial<HttpRoute> = {},
): HttpRoute => ({
  metadata: meta,
  hosts: [],
  authorizations: [],
  rules: [{ matches: [], filters: [], ...rule }],
  ...extra,
});
function server(routes: HttpRoute[] = [], authorizations: Authz[] = [allowAll]): Server {
  return {
    protocol: {
      kind: {
        $case: "detect",
        value: { timeout: { seconds: 10n, nanos: 0 }, httpRoutes: routes, httpLocalRateLimit: undefined },
      },
    },
    serverIps: [],
    authorizations,
    labels: { group: "policy.linkerd.io", kind: "server", name: "web" },
  };
}

/** Each kind of content the proxy cannot compile, with the reason it must be reported under. */
const BAD: [name: string, msg: Server, reason: string][] = [
  ["no protocol (or an unknown kind)", { ...server(), protocol: { kind: undefined } }, "protocol"],
  ["detect without a timeout", {
    ...server(),
    protocol: {
      kind: { $case: "detect", value: { timeout: undefined, httpRoutes: [], httpLocalRateLimit: undefined } },
    },
  }, "protocol"],
  ["no server name", { ...server(), labels: {} }, "metadata"],
  [
    "unknown authentication kind",
    server([], [{ ...allowAll, authentication: { permit: undefined } }]),
    "authentication",
  ],
  [
    "meshTLS without a clients kind",
    server([], [{
      ...allowAll,
      authentication: { permit: { $case: "meshTLS", value: { clients: undefined } } },
    }]),
    "authentication",
  ],
  ["authorization without networks", server([], [{ ...allowAll, networks: [] }]), "network"],
  [
    "IPv4 prefix 33",
    server([], [{
      ...allowAll,
      networks: [{ net: { ip: toIpAddress("10.0.0.0"), prefixLen: 33 }, except: [] }],
    }]),
    "network",
  ],
  [
    "IPv6 prefix 129",
    server([], [{ ...allowAll, networks: [{ net: { ip: toIpAddress("::"), prefixLen: 129 }, except: [] }] }]),
    "network",
  ],
  [
    "network without an address",
    server([], [{ ...allowAll, networks: [{ net: { ip: { ip: undefined }, prefixLen: 0 }, except: [] }] }]),
    "network",
  ],
  [
    "except without an address",
    server([], [{
      ...allowAll,
      networks: [{
        net: { ip: toIpAddress("0.0.0.0"), prefixLen: 0 },
        except: [{ ip: undefined, prefixLen: 8 }],
      }],
    }]),
    "network",
  ],
  [
    "route authorization with an unknown authentication",
    server([route({}, { authorizations: [{ ...allowAll, authentication: undefined }] })]),
    "authentication",
  ],
  ["route without metadata", server([route({}, { metadata: undefined })]), "metadata"],
  [
    "bad path regex",
    server([
      route({
        matches: [{
          path: { kind: { $case: "regex", value: "/api/(" } },
          headers: [],
          queryParams: [],
          method: undefined,
        }],
      }),
    ]),
    "route_match",
  ],
  [
    "path match of unknown kind",
    server([
      route({ matches: [{ path: { kind: undefined }, headers: [], queryParams: [], method: undefined }] }),
    ]),
    "route_match",
  ],
  [
    "header match without a name",
    server([route({
      matches: [{
        path: undefined,
        headers: [{ name: "", value: { $case: "exact", value: new Uint8Array() } }],
        queryParams: [],
        method: undefined,
      }],
    })]),
    "route_match",
  ],
  ["host match without a value", server([route({}, { hosts: [{ match: undefined }] })]), "route_match"],
  ["filter of unknown kind", server([route({ filters: [{ kind: undefined }] })]), "route_filter"],
  [
    "redirect with a relative path",
    server([route({
      filters: [{
        kind: {
          $case: "redirect",
          value: {
            scheme: undefined,
            host: "",
            path: { replace: { $case: "full", value: "rel" } },
            port: 0,
            status: 302,
          },
        },
      }],
    })]),
    "route_filter",
  ],
];

Deno.test("inbound policy: every kind of uncompilable Server becomes the deny-everything policy, with its reason", () => {
  const rng = seededRng(1);
  for (const [name, msg, reason] of BAD) {
    const p = compileInboundPortOrDeny(msg);
    assert.equal(p.invalid?.reason, reason, `${name}: ${p.invalid?.message}`);
    assert.ok(p.invalid.message.length > 0);
    assert.equal(p.serverName, "invalid", name);
    const conn = {
      clientIp: "10.0.0.9",
      tls: { clientId: "a.ns.serviceaccount.identity.linkerd.cluster.local" },
    };
    assert.equal(authorize(p, conn).allow, false, `${name}: a TCP connection is refused`);
    const d = new HttpAuthorizer(conn).authorize(p.http, request("GET", "/anything"), rng);
    assert.equal(d.allow, false, `${name}: an HTTP request is refused`);
    assert.equal(!d.allow && d.status, 403, name);
  }
  // The declared protocol is kept, so an opaque port refuses TCP clients at once.
  const opaque = compileInboundPortOrDeny({
    ...server([], [{ ...allowAll, authentication: { permit: undefined } }]),
    protocol: { kind: { $case: "opaque", value: {} } },
  });
  assert.equal(opaque.protocol, "opaque");
  assert.equal(compileInboundPortOrDeny(BAD[0][1]).protocol, "detect", "no protocol: Linkerd's detect");
  const good = compileInboundPortOrDeny(server());
  assert.equal(good.invalid, undefined);
  assert.equal(authorize(good, { clientIp: "10.0.0.9", tls: undefined }).allow, true);
});

/** A scripted WatchPort stream for one port. */
function scripted() {
  let push: (m: Server) => void = () => {};
  const open: OpenStream<number, Server> = (_port, signal, onMessage) =>
    new Promise((resolve) => {
      push = onMessage;
      signal.addEventListener("abort", () => resolve({ code: 1, details: "cancelled" }));
    });
  return { open, push: (m: Server) => push(m) };
}

Deno.test("inbound policy: an invalid update replaces the permissive one (no stale policy), is counted and logged, and a valid one restores the port", async () => {
  const registry = new Registry();
  const metrics = new InboundPolicyMetrics(registry);
  const lines: string[] = [];
  const s = scripted();
  const w = new SharedWatch<number, Server, InboundPortPolicy>({
    name: "inbound_policy",
    keyOf: (p) => String(p),
    open: s.open,
    reduce: inboundPolicyReducer(metrics, (level, m) => lines.push(`${level} ${m}`)),
    terminalCodes: new Set([3]),
    idleMs: 10,
    backoff: { minMs: 5, maxMs: 10, jitter: 0 },
  });
  const other = new SharedWatch<number, Server, InboundPortPolicy>({
    name: "inbound_policy",
    keyOf: (p) => String(p),
    open: scripted().open,
    reduce: inboundPolicyReducer(metrics, undefined),
    terminalCodes: new Set([3]),
    idleMs: 10,
    backoff: { minMs: 5, maxMs: 10, jitter: 0 },
  });
  const h = w.subscribe(7003);
  const conn = { clientIp: "10.0.0.9", tls: undefined };
  try {
    s.push(server());
    assert.equal(authorize(h.current().state!, conn).allow, true, "allowed by the first policy");
    s.push(BAD.find(([n]) => n === "bad path regex")![1]);
    assert.equal(h.current().state!.serverName, "invalid");
    assert.equal(authorize(h.current().state!, conn).allow, false, "the stale allow-all policy is gone");
    let text = await registry.metrics();
    assert.equal(
      metric(text, "inbound_policy_invalid_total", { port: "7003", reason: "route_match" }),
      1,
      text,
    );
    assert.equal(metric(text, "inbound_policy_invalid", { port: "7003", reason: "route_match" }), 1);
    assert.match(
      lines.join("\n"),
      /warn inbound policy for port 7003 is invalid \(route_match\): .*invalid regex/,
    );
    s.push(BAD.find(([n]) => n === "IPv4 prefix 33")![1]);
    text = await registry.metrics();
    assert.equal(
      metric(text, "inbound_policy_invalid", { port: "7003" }),
      1,
      "one series per port, the latest reason",
    );
    assert.equal(metric(text, "inbound_policy_invalid", { reason: "network" }), 1);
    s.push(server());
    assert.equal(authorize(h.current().state!, conn).allow, true, "a valid policy restores the port");
    text = await registry.metrics();
    assert.equal(metric(text, "inbound_policy_invalid", { port: "7003" }), 0, "the gauge series is gone");
    assert.equal(metric(text, "inbound_policy_invalid_total", { port: "7003" }), 2);
    assert.match(lines.at(-1)!, /info inbound policy for port 7003 is valid again/);
  } finally {
    h.release();
    w.close();
    other.close();
  }
});

Deno.test("inbound policy: change listeners see every new state until their handle is released", () => {
  const s = scripted();
  const w = new SharedWatch<number, Server, InboundPortPolicy>({
    name: "inbound_policy",
    keyOf: (p) => String(p),
    open: s.open,
    reduce: inboundPolicyReducer(new InboundPolicyMetrics(new Registry()), undefined),
    terminalCodes: new Set([3]),
    idleMs: 10,
    backoff: { minMs: 5, maxMs: 10, jitter: 0 },
  });
  const a = w.subscribe(9000), b = w.subscribe(9000);
  const seen: string[] = [];
  a.onChange((p) => seen.push(`a:${p.serverName}`));
  const off = b.onChange((p) => seen.push(`b:${p.serverName}`));
  try {
    s.push(server());
    off();
    s.push(BAD[0][1]);
    a.release();
    s.push(server());
    assert.deepEqual(seen, ["a:web", "b:web", "a:invalid"]);
  } finally {
    b.release();
    w.close();
  }
});

Deno.test("inbound policy: an invalid first message denies (it never falls back to the default policy)", () => {
  const metrics = new InboundPolicyMetrics(new Registry());
  const s = scripted();
  const w = new SharedWatch<number, Server, InboundPortPolicy>({
    name: "inbound_policy",
    keyOf: (p) => String(p),
    open: s.open,
    reduce: inboundPolicyReducer(metrics, undefined),
    terminalCodes: new Set([3]),
    idleMs: 10,
    backoff: { minMs: 5, maxMs: 10, jitter: 0 },
  });
  const h = w.subscribe(8080);
  try {
    s.push(BAD[3][1]);
    const v = h.current();
    assert.equal(v.status, "live");
    assert.equal(v.state?.invalid?.reason, "authentication");
    assert.equal(authorize(v.state!, { clientIp: "10.0.0.9", tls: undefined }).allow, false);
  } finally {
    h.release();
    w.close();
  }
});

import assert from "node:assert/strict";
import type { Authz, HttpRoute, Server } from "../../../proto/gen_messages/inbound.ts";
import { toIpAddress } from "../../../proto/ip.ts";
import { FakeClock } from "../../../proto/support/fake_clock.ts";
import { seededRng } from "../../core/rng.ts";
import { pathPrefix, request } from "../../route/testing.ts";
import { defaultPolicy, PolicyError } from "../authorize.ts";
import {
  compileHttpServer,
  denialResponse,
  HttpAuthorizer,
  httpServerFromPort,
  type HttpServerPolicy,
  type InboundDecision,
} from "./authorize.ts";

const ID = (sa: string, ns = "app") => `${sa}.${ns}.serviceaccount.identity.linkerd.cluster.local`;
const everywhere = [
  { net: { ip: toIpAddress("0.0.0.0"), prefixLen: 0 }, except: [] },
  { net: { ip: toIpAddress("::"), prefixLen: 0 }, except: [] },
];
const meta = (kind: string, name: string) => ({
  kind: {
    $case: "resource" as const,
    value: { group: "policy.linkerd.io", kind, name, namespace: "app", section: "", port: 0 },
  },
});

const unauthenticated = (name: string): Authz => ({
  networks: everywhere,
  authentication: { permit: { $case: "unauthenticated", value: {} } },
  labels: {},
  metadata: meta("AuthorizationPolicy", name),
});
const identities = (name: string, ids: string[], suffixes: string[][] = []): Authz => ({
  networks: everywhere,
  authentication: {
    permit: {
      $case: "meshTLS",
      value: {
        clients: {
          $case: "identities",
          value: {
            identities: ids.map((n) => ({ name: n })),
            suffixes: suffixes.map((parts) => ({ parts })),
          },
        },
      },
    },
  },
  labels: {},
  metadata: meta("AuthorizationPolicy", name),
});

function route(
  name: string,
  prefix: string,
  authorizations: Authz[],
  filters: HttpRoute["rules"][number]["filters"] = [],
): HttpRoute {
  return {
    metadata: meta("HTTPRoute", name),
    hosts: [],
    authorizations,
    rules: [{ matches: [pathPrefix(prefix)], filters }],
  };
}

function server(routes: HttpRoute[], authorizations: Authz[], rateLimit?: Server["protocol"]): Server {
  return {
    protocol: rateLimit ??
      { kind: { $case: "detect", value: { timeout: { seconds: 10n, nanos: 0 }, httpRoutes: routes } } },
    serverIps: [],
    authorizations,
    labels: { name: "web-http", kind: "server", group: "policy.linkerd.io" },
  };
}

type Client = { ip: string; id?: string; tls?: boolean };
const CLIENTS: Record<string, Client> = {
  plaintext: { ip: "10.0.0.5" },
  tlsNoId: { ip: "10.0.0.6", tls: true },
  a: { ip: "10.0.0.7", id: ID("a") },
  b: { ip: "10.0.0.8", id: ID("b") },
  ops: { ip: "10.0.0.9", id: ID("tool", "ops") },
  local: { ip: "127.0.0.1" },
};

function authorizer(c: Client): HttpAuthorizer {
  return new HttpAuthorizer({ clientIp: c.ip, tls: c.id || c.tls ? { clientId: c.id } : undefined });
}

function outcome(d: InboundDecision): string {
  if (!d.allow) return `deny ${d.status} ${d.reason}`;
  const p = "permit" in d ? d.permit : d;
  return `allow ${p.route.name} ${p.authz.name}${"response" in d ? ` → ${d.response.status}` : ""}`;
}

Deno.test("inbound route authz: allow/deny per route and identity; server authorizations apply to every route", () => {
  const policy = compileHttpServer(server([
    route("public", "/public", [unauthenticated("public-any")]),
    route("admin", "/admin", [identities("admin-a", [ID("a")])]),
    route("locked", "/locked", []),
  ], [identities("ops-team", [], [["ops", "serviceaccount", "identity", "linkerd", "cluster", "local"]])]));
  const table: [string, string, string][] = [
    ["plaintext", "/public/x", "allow public public-any"],
    ["plaintext", "/admin", "deny 403 unauthorized"],
    ["tlsNoId", "/admin", "deny 403 unauthorized"],
    ["a", "/admin/users", "allow admin admin-a"],
    ["b", "/admin/users", "deny 403 unauthorized"],
    ["ops", "/admin/users", "allow admin ops-team"],
    ["ops", "/locked", "allow locked ops-team"],
    ["a", "/locked", "deny 403 unauthorized"],
    ["local", "/locked", "allow locked localhost"],
    ["a", "/elsewhere", "deny 404 route_not_found"],
  ];
  for (const [who, path, want] of table) {
    assert.equal(
      outcome(authorizer(CLIENTS[who]).authorize(policy, request("GET", path), Math.random)),
      want,
      `${who} ${path}`,
    );
  }
  const d = authorizer(CLIENTS.b).authorize(policy, request("GET", "/admin"), Math.random);
  assert.ok(!d.allow);
  assert.match(d.message, /route admin on server web-http permits 10\.0\.0\.8 \(b\.app\.serviceaccount/);
  assert.deepEqual(d.route, { group: "policy.linkerd.io", kind: "HTTPRoute", name: "admin" });
  const ok = authorizer(CLIENTS.a).authorize(policy, request("GET", "/admin"), Math.random);
  assert.ok(ok.allow && !("response" in ok));
  assert.deepEqual(ok.server, { group: "policy.linkerd.io", kind: "server", name: "web-http" });
  assert.deepEqual(ok.authz, { group: "policy.linkerd.io", kind: "authorizationpolicy", name: "admin-a" });
});

Deno.test("inbound route authz: no routes → one default route with the server's authorizations", () => {
  const policy = compileHttpServer(server([], [identities("any-mesh", [], [[]])]));
  assert.equal(
    outcome(authorizer(CLIENTS.b).authorize(policy, request("PUT", "/anything"), Math.random)),
    "allow default any-mesh",
  );
  assert.equal(
    outcome(authorizer(CLIENTS.plaintext).authorize(policy, request("GET", "/"), Math.random)),
    "deny 403 unauthorized",
  );

  const fromDefault = httpServerFromPort(defaultPolicy("all-authenticated", [], false));
  assert.equal(
    outcome(authorizer(CLIENTS.a).authorize(fromDefault, request("GET", "/"), Math.random)),
    "allow default all-authenticated",
  );
  assert.equal(
    outcome(authorizer(CLIENTS.plaintext).authorize(fromDefault, request("GET", "/"), Math.random)),
    "deny 403 unauthorized",
  );
  assert.deepEqual(fromDefault.server, { group: "", kind: "default", name: "all-authenticated" });
});

Deno.test("inbound route authz: gRPC routes and gRPC-shaped denials (PERMISSION_DENIED, NOT_FOUND)", () => {
  const s: Server = {
    protocol: {
      kind: {
        $case: "grpc",
        value: {
          routes: [{
            metadata: meta("GRPCRoute", "orders"),
            hosts: [],
            authorizations: [identities("orders-a", [ID("a")])],
            rules: [{ matches: [{ rpc: { service: "shop.Orders", method: "" }, headers: [] }], filters: [] }],
          }],
        },
      },
    },
    serverIps: [],
    authorizations: [],
    labels: { name: "orders-grpc" },
  };
  const policy = compileHttpServer(s);
  assert.equal(policy.grpc, true);
  const call = (path: string) => ({
    ...request("POST", path, "orders:9000", ["content-type", "application/grpc"]),
    version: "HTTP/2" as const,
  });
  assert.equal(
    outcome(authorizer(CLIENTS.a).authorize(policy, call("/shop.Orders/Get"), Math.random)),
    "allow orders orders-a",
  );
  const denied = authorizer(CLIENTS.b).authorize(policy, call("/shop.Orders/Get"), Math.random);
  assert.ok(!denied.allow);
  const res = denialResponse(denied, true);
  assert.deepEqual([res.status, res.headers.get("grpc-status")], [200, "7"]);
  assert.equal(denialResponse(denied, false).status, 403);
  const missing = authorizer(CLIENTS.a).authorize(policy, call("/shop.Payments/Pay"), Math.random);
  assert.ok(!missing.allow);
  assert.deepEqual([missing.status, missing.grpcStatus], [404, 5]);
});

Deno.test("inbound route filters: header modifier applied; failure injection answers instead of the app", () => {
  const policy = compileHttpServer(server([
    route("hdr", "/hdr", [unauthenticated("any")], [{
      kind: {
        $case: "requestHeaderModifier",
        value: {
          add: { headers: [{ name: "x-route", value: new TextEncoder().encode("hdr") }] },
          remove: ["x-secret"],
        },
      },
    }]),
    route("chaos", "/chaos", [unauthenticated("any")], [{
      kind: {
        $case: "failureInjector",
        value: { status: 503, message: "chaos", ratio: { numerator: 1, denominator: 2 } },
      },
    }]),
  ], []));
  const req = request("GET", "/hdr", undefined, ["x-secret", "s"]);
  assert.equal(outcome(authorizer(CLIENTS.plaintext).authorize(policy, req, Math.random)), "allow hdr any");
  assert.deepEqual(req.headers.raw, ["x-route", "hdr"]);
  const rng = seededRng(4);
  const az = authorizer(CLIENTS.plaintext);
  let injected = 0;
  for (let i = 0; i < 1_000; i++) {
    const d = az.authorize(policy, request("GET", "/chaos"), rng);
    if (d.allow && "response" in d) {
      injected++;
      assert.equal(d.response.status, 503);
    }
  }
  assert.ok(injected > 420 && injected < 580, `${injected} of 1000 injected`);
});

Deno.test("inbound local rate limit: per identity → 429 / RESOURCE_EXHAUSTED; refills with time", () => {
  const clock = new FakeClock();
  const s = server([], [unauthenticated("any")], {
    kind: {
      $case: "http1",
      value: {
        routes: [],
        localRateLimit: { metadata: undefined, identity: { requestsPerSecond: 2 }, overrides: [] },
      },
    },
  });
  const policy = compileHttpServer(s, clock);
  const a = authorizer(CLIENTS.a);
  const b = authorizer(CLIENTS.b);
  const run = (az: HttpAuthorizer) => outcome(az.authorize(policy, request("GET", "/"), Math.random));
  assert.deepEqual([run(a), run(a), run(a)], [
    "allow default any",
    "allow default any",
    "deny 429 rate_limited",
  ]);
  assert.equal(run(b), "allow default any", "another identity has its own bucket");
  const d = a.authorize(policy, request("GET", "/"), Math.random);
  assert.ok(!d.allow && d.grpcStatus === 8);
  clock.advance(500);
  assert.equal(run(a), "allow default any");
});

Deno.test("inbound route authz: decisions are per connection and follow policy updates", () => {
  const open = compileHttpServer(server([route("r", "/", [unauthenticated("open")])], []));
  const closed = compileHttpServer(server([route("r", "/", [identities("only-a", [ID("a")])])], []));
  const az = authorizer(CLIENTS.b);
  const run = (p: HttpServerPolicy) => outcome(az.authorize(p, request("GET", "/x"), Math.random));
  assert.equal(run(open), "allow r open");
  assert.equal(run(closed), "deny 403 unauthorized", "a new policy is honoured mid-connection");
  assert.equal(run(open), "allow r open");
});

Deno.test("inbound route authz: invalid policies are refused with the reason", () => {
  assert.throws(
    () => compileHttpServer(server([{ ...route("x", "/", []), metadata: undefined }], [])),
    (e: Error) => e instanceof PolicyError && /http route 0 has no metadata/.test(e.message),
  );
  assert.throws(
    () => compileHttpServer(server([route("bad", "/", [{ ...unauthenticated("n"), networks: [] }])], [])),
    /http route bad: authorization 0 has no networks/,
  );
});

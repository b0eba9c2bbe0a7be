import * as grpc from "@grpc/grpc-js";
import { assertEquals } from "./assert.ts";
import { defaultPolicyConfig } from "./config.ts";
import { inboundPolicy } from "./inbound_index.ts";
import { rateLimitStatus, serverRateLimit, statusUpdate } from "./ratelimit.ts";
import { RateLimitStatusWriter } from "./ratelimit_status.ts";
import type {
  HttpLocalRateLimitPolicy,
  HttpLocalRateLimitPolicySpec,
  HttpLocalRateLimitPolicyStatus,
  Kind,
  Obj,
} from "./resources.ts";
import type { StatusClient } from "./route_status.ts";
import { startPolicyServer } from "./test_server.ts";
import { meta, namespace, pod, server, storeWith } from "./testing.ts";

type ProtoServer = ReturnType<typeof inboundPolicy>;
type HttpLocalRateLimit = NonNullable<ReturnType<typeof serverRateLimit>>;

const cfg = defaultPolicyConfig({ controlPlaneNamespace: "weft", identityTrustDomain: "cluster.local" });
const NS = "emojivoto";
const id = (sa: string, ns = NS) => `${sa}.${ns}.serviceaccount.identity.weft.cluster.local`;

function rl(
  name: string,
  spec: HttpLocalRateLimitPolicySpec,
  created = "2026-01-01T00:00:00Z",
): HttpLocalRateLimitPolicy {
  return { metadata: { ...meta(NS, name, { created }), generation: 1 }, spec };
}
const toServer = (name: string) => ({ group: "policy.linkerd.io", kind: "Server", name });

function policy(proxyProtocol: string, ...objects: [Kind, Obj][]): ProtoServer {
  return inboundPolicy(
    storeWith(
      ["Namespace", namespace(NS)],
      ["Pod", pod(NS, "web-1", { app: "web" })],
      [
        "Server",
        server(NS, "web-http", { podSelector: { matchLabels: { app: "web" } }, port: 8080, proxyProtocol }),
      ],
      ...objects,
    ),
    cfg,
    NS,
    "web-1",
    8080,
  );
}

function limitOf(s: ProtoServer): HttpLocalRateLimit | undefined {
  const k = s.protocol?.kind;
  if (k?.$case === "detect") return k.value.httpLocalRateLimit;
  if (k?.$case === "http1" || k?.$case === "http2") return k.value.localRateLimit;
  return undefined;
}

const fullSpec: HttpLocalRateLimitPolicySpec = {
  targetRef: toServer("web-http"),
  total: { requestsPerSecond: 100 },
  identity: { requestsPerSecond: 20 },
  overrides: [
    { requestsPerSecond: 50, clientRefs: [{ kind: "ServiceAccount", name: "vip" }] },
    {
      requestsPerSecond: 80,
      clientRefs: [
        { kind: "ServiceAccount", name: "batch", namespace: "jobs" },
        { group: "core", kind: "serviceaccount", name: "cron" },
      ],
    },
  ],
};

Deno.test("rate limit: a policy on an HTTP/1 Server becomes its local_rate_limit, overrides as identities", () => {
  const got = limitOf(policy("HTTP/1", ["HTTPLocalRateLimitPolicy", rl("web-rl", fullSpec)]));
  assertEquals(got, {
    metadata: {
      kind: {
        $case: "resource",
        value: {
          group: "policy.linkerd.io",
          kind: "HTTPLocalRateLimitPolicy",
          name: "web-rl",
          namespace: NS,
          section: "",
          port: 0,
        },
      },
    },
    total: { requestsPerSecond: 100 },
    identity: { requestsPerSecond: 20 },
    overrides: [
      { limit: { requestsPerSecond: 50 }, clients: { identities: [{ name: id("vip") }] } },
      {
        limit: { requestsPerSecond: 80 },
        clients: { identities: [{ name: id("batch", "jobs") }, { name: id("cron") }] },
      },
    ],
  });
});

Deno.test("rate limit: set on Detect (unknown) and HTTP/2 Servers; only the limits given are sent", () => {
  const spec = { targetRef: toServer("web-http"), identity: { requestsPerSecond: 5 } };
  for (const proto of ["unknown", "HTTP/2"]) {
    const got = limitOf(policy(proto, ["HTTPLocalRateLimitPolicy", rl("web-rl", spec)]));
    assertEquals(got?.total, undefined, proto);
    assertEquals(got?.identity, { requestsPerSecond: 5 }, proto);
    assertEquals(got?.overrides, [], proto);
  }
});

Deno.test("rate limit: none on gRPC, opaque and TLS Servers (the proxy API has no field there)", () => {
  for (const proto of ["gRPC", "opaque", "TLS"]) {
    const s = policy(proto, ["HTTPLocalRateLimitPolicy", rl("web-rl", fullSpec)]);
    assertEquals(JSON.stringify(s).includes("HTTPLocalRateLimitPolicy"), false, proto);
  }
});

Deno.test("rate limit: a policy for another Server, or one that does not target a Server, changes nothing", () => {
  const other = rl("other", { ...fullSpec, targetRef: toServer("admin-http") });
  const notServer = rl("svc", { ...fullSpec, targetRef: { kind: "Service", name: "web-http" } });
  assertEquals(
    limitOf(policy("HTTP/1", ["HTTPLocalRateLimitPolicy", other], ["HTTPLocalRateLimitPolicy", notServer])),
    undefined,
  );
  // Without a Server the port gets the default policy, which no rate limit can target.
  const s = inboundPolicy(
    storeWith(["Namespace", namespace(NS)], ["Pod", pod(NS, "web-1", { app: "web" })], [
      "HTTPLocalRateLimitPolicy",
      rl("web-rl", fullSpec),
    ]),
    cfg,
    NS,
    "web-1",
    8080,
  );
  assertEquals(limitOf(s), undefined);
});

Deno.test("rate limit: group and kind of the targetRef are compared ignoring case, as Linkerd does", () => {
  const spec = { ...fullSpec, targetRef: { group: "Policy.Linkerd.IO", kind: "server", name: "web-http" } };
  assertEquals(limitOf(policy("HTTP/1", ["HTTPLocalRateLimitPolicy", rl("web-rl", spec)]))?.total, {
    requestsPerSecond: 100,
  });
});

Deno.test("rate limit: of two policies on one Server the older applies, then by name", () => {
  const older = rl(
    "zeta",
    { targetRef: toServer("web-http"), total: { requestsPerSecond: 7 } },
    "2026-01-01T00:00:00Z",
  );
  const newer = rl(
    "alpha",
    { targetRef: toServer("web-http"), total: { requestsPerSecond: 9 } },
    "2026-02-01T00:00:00Z",
  );
  const tie = rl(
    "beta",
    { targetRef: toServer("web-http"), total: { requestsPerSecond: 11 } },
    "2026-01-01T00:00:00Z",
  );
  assertEquals(
    limitOf(policy("HTTP/1", ["HTTPLocalRateLimitPolicy", newer], ["HTTPLocalRateLimitPolicy", older]))
      ?.total,
    { requestsPerSecond: 7 },
  );
  assertEquals(
    limitOf(policy("HTTP/1", ["HTTPLocalRateLimitPolicy", older], ["HTTPLocalRateLimitPolicy", tie]))?.total,
    { requestsPerSecond: 11 },
  );
});

Deno.test("rate limit: a stored policy admission would refuse (client not a ServiceAccount) is skipped", () => {
  const bad = rl("bad", {
    targetRef: toServer("web-http"),
    total: { requestsPerSecond: 3 },
    overrides: [{ requestsPerSecond: 1, clientRefs: [{ kind: "Namespace", name: NS }] }],
  });
  assertEquals(limitOf(policy("HTTP/1", ["HTTPLocalRateLimitPolicy", bad])), undefined);
});

// --- status ---

const NOW = "2026-03-01T00:00:00Z";
const accepted = (s: HttpLocalRateLimitPolicyStatus | undefined) =>
  s?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`);

Deno.test("rate limit status: Accepted for the Server's first policy, AlreadyExists for the next, NoMatchingTarget without the Server", () => {
  const first = rl("first", { targetRef: toServer("web-http") }, "2026-01-01T00:00:00Z");
  const second = rl("second", { targetRef: toServer("web-http") }, "2026-01-02T00:00:00Z");
  const orphan = rl("orphan", { targetRef: toServer("gone") });
  const store = storeWith(
    ["Server", server(NS, "web-http", { podSelector: {}, port: 8080 })],
    ["HTTPLocalRateLimitPolicy", first],
    ["HTTPLocalRateLimitPolicy", second],
    ["HTTPLocalRateLimitPolicy", orphan],
  );
  assertEquals(accepted(rateLimitStatus(store, first, NOW)), ["Accepted=True/Accepted"]);
  assertEquals(accepted(rateLimitStatus(store, second, NOW)), [
    "Accepted=False/RateLimitReasonAlreadyExists",
  ]);
  assertEquals(accepted(rateLimitStatus(store, orphan, NOW)), ["Accepted=False/NoMatchingTarget"]);
  assertEquals(rateLimitStatus(store, first, NOW)?.targetRef, toServer("web-http"));
  assertEquals(rateLimitStatus(store, first, NOW)?.conditions?.[0].observedGeneration, 1);
  // A target that is not a Server gets no status, as in Linkerd.
  assertEquals(
    rateLimitStatus(store, rl("svc", { targetRef: { kind: "Service", name: "x" } }), NOW),
    undefined,
  );
});

Deno.test("rate limit status: an unchanged status is not rewritten; a changed one keeps unchanged transition times", () => {
  const store = storeWith(["Server", server(NS, "web-http", { podSelector: {}, port: 8080 })]);
  const p = rl("p", { targetRef: toServer("web-http") });
  const current = rateLimitStatus(store, p, "2026-01-01T00:00:00Z")!;
  assertEquals(statusUpdate(current, rateLimitStatus(store, p, NOW)!), undefined);
  const changed = rateLimitStatus(store, { ...p, metadata: { ...p.metadata, generation: 2 } }, NOW)!;
  const next = statusUpdate(current, changed);
  assertEquals(next?.conditions?.[0].observedGeneration, 2);
  assertEquals(next?.conditions?.[0].lastTransitionTime, "2026-01-01T00:00:00Z");
  assertEquals(
    statusUpdate(undefined, rateLimitStatus(store, p, NOW)!)?.conditions?.[0].lastTransitionTime,
    NOW,
  );
});

class RecordingClient implements StatusClient {
  readonly patches: { kind: Kind; ns: string; name: string; status: HttpLocalRateLimitPolicyStatus }[] = [];
  patchStatus(kind: Kind, ns: string, name: string, status: unknown): Promise<void> {
    this.patches.push({ kind, ns, name, status: status as HttpLocalRateLimitPolicyStatus });
    return Promise.resolve();
  }
}

Deno.test("rate limit status writer: patches a new policy, then only when the Server's presence changes it", async () => {
  const store = storeWith(["Server", server(NS, "web-http", { podSelector: {}, port: 8080 })]);
  const client = new RecordingClient();
  const w = new RateLimitStatusWriter(store, client, { delayMs: 1, now: () => new Date(NOW) });
  try {
    const p = rl("p", { targetRef: toServer("web-http") });
    store.apply({ type: "added", kind: "HTTPLocalRateLimitPolicy", object: p });
    await new Promise((r) => setTimeout(r, 30));
    assertEquals(client.patches.map((x) => `${x.kind} ${x.ns}/${x.name} ${accepted(x.status)}`), [
      `HTTPLocalRateLimitPolicy ${NS}/p Accepted=True/Accepted`,
    ]);
    // The API server echoes the status back: nothing more to write.
    store.apply({
      type: "modified",
      kind: "HTTPLocalRateLimitPolicy",
      object: { ...p, metadata: { ...p.metadata, resourceVersion: "r2" }, status: client.patches[0].status },
    });
    await new Promise((r) => setTimeout(r, 30));
    assertEquals(client.patches.length, 1);
    store.apply({
      type: "deleted",
      kind: "Server",
      object: server(NS, "web-http", { podSelector: {}, port: 8080 }),
    });
    await new Promise((r) => setTimeout(r, 30));
    assertEquals(accepted(client.patches[1]?.status), ["Accepted=False/NoMatchingTarget"]);
  } finally {
    w.close();
  }
});

Deno.test("rate limit: WatchPort streams the limit when a policy is added and drops it when deleted", async () => {
  await using t = await startPolicyServer();
  t.source.emit("added", "Namespace", namespace(NS));
  t.source.emit("added", "Pod", pod(NS, "web-1", { app: "web" }));
  t.source.emit(
    "added",
    "Server",
    server(NS, "web-http", {
      podSelector: { matchLabels: { app: "web" } },
      port: 8080,
      proxyProtocol: "HTTP/1",
    }),
  );
  const call = t.inbound.watchPort({ workload: JSON.stringify({ ns: NS, pod: "web-1" }), port: 8080 });
  const seen: ProtoServer[] = [];
  call.on("data", (m: ProtoServer) => seen.push(m));
  call.on("error", (_e: grpc.ServiceError) => {});
  const waitFor = async (n: number) => {
    const deadline = Date.now() + 5000;
    while (seen.length < n) {
      if (Date.now() > deadline) throw new Error(`no message #${n} within 5s`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return seen[n - 1];
  };
  assertEquals(limitOf(await waitFor(1)), undefined);
  const p = rl("web-rl", { targetRef: toServer("web-http"), total: { requestsPerSecond: 4 } });
  t.source.emit("added", "HTTPLocalRateLimitPolicy", p);
  assertEquals(limitOf(await waitFor(2))?.total, { requestsPerSecond: 4 });
  t.source.emit("deleted", "HTTPLocalRateLimitPolicy", p);
  assertEquals(limitOf(await waitFor(3)), undefined);
  call.cancel();
});

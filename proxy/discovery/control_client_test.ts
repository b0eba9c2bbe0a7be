// Control-plane channels with real TLS against a real grpc-js server on loopback, and the
// control_* metrics of the proxy's control-plane clients (Get, GetProfile, WatchPort, Watch and
// Certify counted with Linkerd's labels when each call ends).
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { type DestinationProfile, DestinationService, type Update } from "../../proto/gen/destination.ts";
import { type CertifyResponse, IdentityService } from "../../proto/gen/identity.ts";
import { InboundServerPoliciesService, type Server } from "../../proto/gen/inbound.ts";
import { OutboundPoliciesService, type OutboundPolicy } from "../../proto/gen/outbound.ts";
import { IdentityDefinition } from "../../proto/gen_messages/identity.ts";
import { CertStore } from "../core/cert_store.ts";
import { createTestCa } from "../testing/certs.ts";
import { methodOf } from "../grpc/client.ts";
import { dnsResolve } from "../grpc/resolve.ts";
import { GrpcError, Status } from "../grpc/status.ts";
import { controlChannel } from "./control_client.ts";
import { Discovery } from "./clients.ts";
import { createCertifyClient } from "../identity/certify_client.ts";
import { controlMetricsFor } from "../metrics/control_metrics.ts";
import { Registry } from "../metrics/registry.ts";
import { fallbackPolicy } from "../testing/control_plane.ts";
import { metric, until } from "../testing/poll.ts";

const enc = new TextEncoder();
const SERVER = "weft-destination.weft.serviceaccount.identity.weft.cluster.local";
const CERTIFY = methodOf(IdentityDefinition, "certify");
const BACKOFF = { minMs: 50, maxMs: 200, jitter: 0 };

/** A grpc-js server that requires a client certificate and records the client's SAN per call. */
async function mtlsServer(serverName: string) {
  const ca = await createTestCa("anchor");
  const serverCreds = await ca.issue(serverName);
  const seen: string[] = [];
  const server = new grpc.Server();
  server.addService(IdentityService, {
    certify: (
      call: grpc.ServerUnaryCall<unknown, CertifyResponse>,
      cb: grpc.sendUnaryData<CertifyResponse>,
    ) => {
      const peer = call.getAuthContext?.()?.sslPeerCertificate;
      seen.push(peer?.subjectaltname ?? "none");
      cb(null, { leafCertificate: new Uint8Array([1]), intermediateCertificates: [], validUntil: undefined });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createSsl(
        Buffer.from(enc.encode(ca.certPem)),
        [{
          cert_chain: Buffer.from(enc.encode(serverCreds.certChainPem)),
          private_key: Buffer.from(enc.encode(serverCreds.keyPem)),
        }],
        true,
      ),
      (e, p) => e ? reject(e) : resolve(p),
    )
  );
  return { ca, port, seen, close: () => server.forceShutdown() };
}

const request = { identity: "web", token: new Uint8Array(), certificateSigningRequest: new Uint8Array() };

Deno.test("control client: a channel made before certification waits, then presents the client certificate", async () => {
  const s = await mtlsServer(SERVER);
  const store = new CertStore();
  const svc = { addr: { host: "127.0.0.1", port: s.port }, name: SERVER, plaintext: false };
  const { channel, client } = controlChannel(svc as never, store, BACKOFF);
  try {
    const call = client.unary(CERTIFY, request, { timeoutMs: 10_000 });
    // Certified only after the call was started: dialling without a certificate would fail.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(s.seen.length, 0);
    store.set(await s.ca.issue("web.demo.serviceaccount.identity.weft.cluster.local"));
    const res = await call;
    assert.deepEqual(res.leafCertificate, new Uint8Array([1]));
    assert.deepEqual(s.seen, ["DNS:web.demo.serviceaccount.identity.weft.cluster.local"]);
  } finally {
    await channel.close();
    s.close();
  }
});

Deno.test("control client: a server without the expected identity is refused, naming both", async () => {
  const s = await mtlsServer("impostor.weft.serviceaccount.identity.weft.cluster.local");
  const store = new CertStore();
  store.set(await s.ca.issue("web.demo.serviceaccount.identity.weft.cluster.local"));
  const svc = { addr: { host: "127.0.0.1", port: s.port }, name: SERVER, plaintext: false };
  const { channel, client } = controlChannel(svc as never, store, BACKOFF);
  try {
    await assert.rejects(
      client.unary(CERTIFY, request, { timeoutMs: 5000 }),
      (e) =>
        e instanceof GrpcError && e.code === Status.UNAVAILABLE && e.details.includes(`want ${SERVER}`) &&
        e.details.includes("impostor.weft"),
    );
    assert.deepEqual(s.seen, [], "no call reached the impostor");
  } finally {
    await channel.close();
    s.close();
  }
});

Deno.test("control client: the target's addresses come from the system resolver; an IP is used as is", async () => {
  assert.deepEqual(await dnsResolve("10.1.2.3", 8086)(AbortSignal.timeout(1000)), [{
    host: "10.1.2.3",
    port: 8086,
  }]);
  assert.deepEqual(await dnsResolve("[fd00::1]", 8090)(AbortSignal.timeout(1000)), [{
    host: "fd00::1",
    port: 8090,
  }]);
  // `localhost.` (loopback in the proxy's config) is 127.0.0.1 without a lookup.
  assert.deepEqual(await dnsResolve("localhost.", 8086)(AbortSignal.timeout(1000)), [{
    host: "127.0.0.1",
    port: 8086,
  }]);
  const local = await dnsResolve("localhost", 8080)(AbortSignal.timeout(5000));
  assert.ok(local.length >= 1 && local.every((e) => e.port === 8080), JSON.stringify(local));
  assert.ok(local.some((e) => e.host === "127.0.0.1" || e.host === "::1"), JSON.stringify(local));
  await assert.rejects(
    dnsResolve("no-such-name.invalid.", 1)(AbortSignal.timeout(5000)),
    /cannot resolve no-such-name\.invalid\./,
  );
});

const SERVER_MSG: Server = {
  protocol: {
    kind: {
      $case: "detect",
      value: { timeout: { seconds: 10n, nanos: 0 }, httpRoutes: [], httpLocalRateLimit: undefined },
    },
  },
  serverIps: [],
  authorizations: [],
  labels: { group: "policy.linkerd.io", kind: "server", name: "web" },
};

const PROFILE: DestinationProfile = {
  routes: [],
  retryBudget: undefined,
  dstOverrides: [],
  opaqueProtocol: false,
  fullyQualifiedName: "",
  endpoint: undefined,
  parentRef: undefined,
  profileRef: undefined,
};

/** One message, then the stream ends with OK: the call's response is then complete. */
function oneThenEnd<Req, Res>(seen: string[], name: string, msg: (req: Req) => Res) {
  return (call: grpc.ServerWritableStream<Req, Res>) => {
    seen.push(name);
    call.write(msg(call.request));
    call.end();
  };
}

async function startServer() {
  const seen: string[] = [];
  let certifyCalls = 0;
  const server = new grpc.Server();
  server.addService(DestinationService, {
    get: oneThenEnd<unknown, Update>(seen, "Get", () => ({
      update: { $case: "noEndpoints", value: { exists: true } },
    })),
    getProfile: oneThenEnd<unknown, DestinationProfile>(seen, "GetProfile", () => PROFILE),
  });
  server.addService(InboundServerPoliciesService, {
    getPort: (_c: unknown, cb: grpc.sendUnaryData<Server>) => cb(null, SERVER_MSG),
    watchPort: oneThenEnd<unknown, Server>(seen, "WatchPort", () => SERVER_MSG),
  });
  server.addService(OutboundPoliciesService, {
    get: (_c: unknown, cb: grpc.sendUnaryData<OutboundPolicy>) => cb(null, fallbackPolicy("10.1.1.1", 80)),
    watch: oneThenEnd<unknown, OutboundPolicy>(seen, "Watch", () => fallbackPolicy("10.1.1.1", 80)),
  });
  server.addService(IdentityService, {
    certify: (_call: unknown, cb: grpc.sendUnaryData<CertifyResponse>) => {
      seen.push("Certify");
      // The first call fails as an unreachable identity would; the second answers.
      if (certifyCalls++ === 0) cb({ code: grpc.status.UNAVAILABLE, details: "not yet" });
      else {cb(null, {
          leafCertificate: new Uint8Array([1]),
          intermediateCertificates: [],
          validUntil: undefined,
        });}
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createInsecure(),
      (e, p) => e ? reject(e) : resolve(p),
    )
  );
  return { port, seen, close: () => server.forceShutdown() };
}

Deno.test("control_* metrics: Get, GetProfile, WatchPort, Watch and Certify are counted with Linkerd's labels", async () => {
  const s = await startServer();
  const registry = new Registry();
  const addr = `127.0.0.1:${s.port}`;
  // Loopback controllers are plaintext, as in the control plane's own pods.
  const svc = { addr: { host: "127.0.0.1", port: s.port }, name: undefined, plaintext: true };
  const d = new Discovery({
    store: new CertStore(),
    destination: svc,
    policy: svc,
    workload: "{}",
    contextToken: "{}",
    // Slow reconnects: each stream the server ends is counted once before the next.
    backoff: { minMs: 30_000, maxMs: 30_000, jitter: 0 },
    inboundIdleMs: 60_000,
    outboundIdleMs: 60_000,
    registry,
  });
  const certify = createCertifyClient({
    svcAddr: addr,
    trustAnchorsPem: "",
    metrics: controlMetricsFor(registry),
  });
  const labels = { addr, tls: "no_identity", no_tls_reason: "loopback" };
  const ok = { ...labels, classification: "success", grpc_status: "0", status_code: "200" };
  const scrape = () => registry.metrics();
  /** Waits until `control_response_total{ok}` reaches `n`, after the server saw `method`. */
  const responses = async (method: string, n: number) => {
    await until(`${method} counted`, async () => {
      const t = await scrape();
      return s.seen.includes(method) && metric(t, "control_response_total", ok) >= n ? true : undefined;
    }, 10_000);
    return metric(await scrape(), "control_response_total", ok);
  };
  const handles: { release(): void }[] = [];
  try {
    handles.push(d.inbound.subscribe(4191));
    assert.equal(await responses("WatchPort", 1), 1);
    handles.push(d.outbound.subscribe({ ip: "10.1.1.1", port: 80 }));
    assert.equal(await responses("Watch", 2), 2);
    handles.push(d.destination.subscribe("web.ns.svc.cluster.local:80"));
    assert.equal(await responses("Get", 3), 3);
    handles.push(d.profile.subscribe("web.ns.svc.cluster.local:80"));
    assert.equal(await responses("GetProfile", 4), 4);

    await assert.rejects(
      certify.certify(
        { identity: "a", token: new Uint8Array(), certificateSigningRequest: new Uint8Array() },
        5000,
      ),
    );
    await certify.certify({
      identity: "a",
      token: new Uint8Array(),
      certificateSigningRequest: new Uint8Array(),
    }, 5000);
    const text = await scrape();
    assert.equal(metric(text, "control_response_total", ok), 5, text);
    assert.equal(
      metric(text, "control_response_total", { ...labels, classification: "failure", grpc_status: "14" }),
      1,
      text,
    );
    assert.equal(metric(text, "control_request_total", labels), 6, text);
    assert.ok(
      metric(text, "control_response_latency_ms_count", { ...labels, status_code: "200" }) >= 5,
      text,
    );
    // Linkerd's label names and order on the response counter.
    assert.match(
      text,
      new RegExp(
        `control_response_total\\{addr="${addr}",tls="no_identity",no_tls_reason="loopback",status_code="200",` +
          `classification="success",grpc_status="0",error=""\\} 5`,
      ),
    );
  } finally {
    for (const h of handles) h.release();
    d.close();
    certify.close();
    s.close();
  }
});

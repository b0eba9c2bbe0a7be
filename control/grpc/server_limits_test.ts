/**
 * Attacks on the control-plane gRPC servers over real sockets: the real policy and destination
 * grpc-js servers on 127.0.0.1, a hand-written HTTP/2 client as the attacker (raw_h2_client.ts),
 * and grpc-js clients as the well-behaved proxies that must keep being served meanwhile.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { type InboundServerPoliciesClient, PortSpec, type Server } from "../../proto/gen/inbound.ts";
import { startPolicyServer } from "../policy/test_server.ts";
import { namespace, pod } from "../policy/testing.ts";
import { GetDestination, type Update } from "../../proto/gen/destination.ts";
import { Fixture, service as destService, slice } from "../destination/testing.ts";
import { type CertifyRequest, IdentityClient } from "../../proto/gen/identity.ts";
import { serveIdentityGrpc } from "../identity/grpc_server.ts";
import type { CertifyService } from "../identity/service.ts";
import { RequestError } from "./request_error.ts";
import { CONTROL_SERVER_LIMITS, controlServerOptions } from "./server_options.ts";
import { H2Error, RawH2Client, type StreamState } from "./raw_h2_client.ts";

const NS = "emojivoto";
const WATCH_PORT = "/io.linkerd.proxy.inbound.InboundServerPolicies/WatchPort";
const GET = "/io.linkerd.proxy.destination.Destination/Get";
const MIB = 1024 * 1024;

function mem(label: string): number {
  const m = Deno.memoryUsage();
  console.log(
    `${label}: rss ${(m.rss / MIB).toFixed(1)} MiB, heap used ${(m.heapUsed / MIB).toFixed(1)} MiB`,
  );
  return m.heapUsed;
}

const tick = () => new Promise((r) => setTimeout(r, 0));

async function policyServer(opts: Parameters<typeof startPolicyServer>[0]) {
  const t = await startPolicyServer(opts);
  t.source.emit("added", "Namespace", namespace(NS));
  for (const p of ["victim-1", "attacker-1"]) t.source.emit("added", "Pod", pod(NS, p, { app: p }));
  const flipInNs = t.flip;
  return Object.assign(t, { flip: (name: string) => flipInNs(NS, name) });
}

const workload = (p: string) => JSON.stringify({ ns: NS, pod: p });

/** A grpc-js WatchPort stream that records what it receives. */
function watch(client: InboundServerPoliciesClient, pod: string) {
  const got: Server[] = [];
  let status: grpc.StatusObject | undefined;
  const call = client.watchPort({ workload: workload(pod), port: 8080 });
  call.on("data", (m: Server) => got.push(m));
  call.on("error", () => {});
  call.on("status", (s: grpc.StatusObject) => status = s);
  return { got, call, status: () => status };
}

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("control server options: the three APIs get their limits, and a bad override is refused by name", () => {
  const o = controlServerOptions("policy", []);
  assert.equal(o["grpc.max_concurrent_streams"], CONTROL_SERVER_LIMITS.policy.maxConcurrentStreams);
  assert.equal(o["grpc.max_receive_message_length"], 16 * 1024);
  assert.equal(controlServerOptions("identity", [])["grpc.max_receive_message_length"], 64 * 1024);
  assert.equal(controlServerOptions("destination", [])["grpc.max_send_message_length"], 4 * MIB);
  // No client-ping policy is set: grpc-js servers do not enforce one, and a setting would only mislead.
  assert.equal(o["grpc.http2.min_ping_interval_without_data_ms"], undefined);
  assert.throws(
    () => controlServerOptions("policy", [], { maxConcurrentStreams: 0 }),
    /policy\.maxConcurrentStreams must be a positive integer, got 0/,
  );
});

Deno.test("hostile: a client that opens policy streams without reading is reset within the send timeout without affecting others", async () => {
  const sendTimeoutMs = 500;
  // No coalescing window: the victim must see one update per flip, which the test counts.
  await using t = await policyServer({
    streamSendTimeoutMs: sendTimeoutMs,
    streamQueueCapacity: 100_000,
    coalesceWindowMs: 0,
  });
  const before = mem("policy server before the attack");
  const victim = watch(t.inbound, "victim-1");
  await until(() => victim.got.length === 1, 5000, "the well-behaved client's first policy");

  // The attacker: one connection, 50 WatchPort streams on its own pod, a 1 KiB receive window it
  // never opens.
  const attacker = await RawH2Client.connect(t.port, 1024);
  const stuck: StreamState[] = [];
  for (let i = 0; i < 50; i++) {
    stuck.push(
      attacker.openCall(
        WATCH_PORT,
        PortSpec.encode({ workload: workload("attacker-1"), port: 8080 }).finish(),
      ),
    );
  }
  await attacker.until(() => stuck.every((s) => s.headers > 0), 5000, "response headers on every stream");

  // Updates until the server's buffers for the attacker's streams are full, interleaved with updates
  // for the victim, which must see every one of them.
  const rounds = 400;
  const firstFlip = performance.now();
  let lastFlip = 0;
  for (let i = 0; i < rounds; i++) {
    t.flip("attacker-1");
    t.flip("victim-1");
    await tick();
    lastFlip = performance.now();
  }
  await until(() => victim.got.length === 1 + rounds, 10_000, `the victim receiving all ${rounds} updates`);

  // Every stuck stream is reset (CANCEL) once its transport has been backed up for the send timeout:
  // at the latest the timeout after the last update, plus a generous margin for the loaded 2 cores.
  await attacker.until(
    () => stuck.every((s) => s.reset !== undefined),
    sendTimeoutMs + 5000,
    "reset of every stuck stream",
  );
  const latest = Math.max(...stuck.map((s) => s.reset!.at)) - firstFlip;
  console.log(
    `stuck streams reset by ${latest.toFixed(0)} ms after the first update; the ${rounds} updates took ` +
      `${(lastFlip - firstFlip).toFixed(0)} ms (send timeout ${sendTimeoutMs} ms)`,
  );
  assert.ok(stuck.every((s) => s.reset!.code === H2Error.CANCEL), "reset with CANCEL");
  const timeouts = await t.registry.getSingleMetricAsString("policy_stream_send_timeouts_total");
  assert.match(timeouts, /direction="inbound"} 50/);
  assert.equal(t.srv.openStreams, 1, "only the victim's stream is left");
  const after = mem("policy server after the attack");
  // 50 stuck streams of ~100-byte updates: far below this bound if nothing is kept for them.
  assert.ok(after - before < 64 * MIB, `heap grew by ${((after - before) / MIB).toFixed(1)} MiB`);

  // The victim is still served after the attack.
  t.flip("victim-1");
  await until(() => victim.got.length === 2 + rounds, 5000, "an update after the attack");
  assert.equal(victim.status(), undefined, "the victim's stream is still open");
  victim.call.cancel();
  await attacker.close();
});

Deno.test("hostile: a connection opening more streams than the limit gets the excess refused, others unaffected", async () => {
  const limit = 8;
  await using t = await policyServer({ limits: { maxConcurrentStreams: limit } });
  const attacker = await RawH2Client.connect(t.port, 65_535);
  assert.equal(
    attacker.serverSettings.get(3),
    limit,
    "the server advertises SETTINGS_MAX_CONCURRENT_STREAMS",
  );
  const streams: StreamState[] = [];
  for (let i = 0; i < limit * 3; i++) {
    streams.push(
      attacker.openCall(
        WATCH_PORT,
        PortSpec.encode({ workload: workload("attacker-1"), port: 8080 }).finish(),
      ),
    );
  }
  await attacker.until(
    () => streams.every((s) => s.reset !== undefined || s.dataBytes > 0) || attacker.closed,
    5000,
    "an answer on every stream",
  );
  const served = streams.filter((s) => s.dataBytes > 0 && !s.reset);
  const refused = streams.filter((s) => s.reset?.code === H2Error.REFUSED_STREAM);
  console.log(
    `streams opened ${streams.length}, served ${served.length}, refused ${refused.length}, ` +
      `GOAWAY ${JSON.stringify(attacker.goaway)}`,
  );
  // HTTP/2 allows either answer to a peer that ignores SETTINGS_MAX_CONCURRENT_STREAMS: refuse the
  // excess streams, or end the connection as a protocol error. Deno's server does the latter, naming
  // the last stream it accepted; either way no more than `limit` streams were ever taken on.
  if (attacker.goaway) {
    assert.equal(attacker.goaway.code, H2Error.PROTOCOL_ERROR);
    assert.ok(attacker.goaway.lastStream <= streams[limit - 1].id, "no stream past the limit accepted");
    assert.ok(attacker.closed, "the offending connection is closed");
  } else {
    assert.equal(served.length, limit);
    assert.equal(refused.length, streams.length - limit);
  }
  await until(() => t.srv.openStreams === 0, 5000, "the attacker's streams being released");

  // Another connection is served in full.
  const victim = watch(t.inbound, "victim-1");
  await until(() => victim.got.length === 1, 5000, "the well-behaved client's first policy");
  t.flip("victim-1");
  await until(() => victim.got.length === 2, 5000, "the well-behaved client's update");
  victim.call.cancel();
  await attacker.close();
});

Deno.test("hostile: a request larger than the API's receive limit fails with RESOURCE_EXHAUSTED, others unaffected", async () => {
  await using t = await policyServer({});
  const big = watch(t.inbound, "x".repeat(CONTROL_SERVER_LIMITS.policy.maxReceiveMessageBytes + 1));
  await until(() => big.status() !== undefined, 5000, "the oversized call ending");
  assert.equal(big.status()!.code, grpc.status.RESOURCE_EXHAUSTED);
  const victim = watch(t.inbound, "victim-1");
  await until(() => victim.got.length === 1, 5000, "the well-behaved client's first policy");
  victim.call.cancel();
});

Deno.test("hostile: a client that opens destination Get streams without reading is reset within the send timeout without affecting others", async () => {
  const sendTimeoutMs = 500;
  const f = await new Fixture().start({ streamQueueCapacity: 100_000, streamSendTimeoutMs: sendTimeoutMs });
  try {
    const eps = Array.from({ length: 20 }, (_, i) => ({ ip: `10.2.0.${i + 1}` }));
    const ports = (g: number) => [{ name: "http", port: 1000 + g }];
    f.apply("services", destService("ns", "web"));
    f.apply("endpointslices", slice("ns", "web", eps, ports(0)));
    const before = mem("destination server before the attack");
    const victim = f.get("web.ns.svc.cluster.local:80");
    await victim.next();

    const attacker = await RawH2Client.connect(f.port, 1024);
    const request = GetDestination.encode({
      scheme: "k8s",
      path: "web.ns.svc.cluster.local:80",
      contextToken: "",
    })
      .finish();
    const stuck: StreamState[] = [];
    for (let i = 0; i < 50; i++) stuck.push(attacker.openCall(GET, request));
    await attacker.until(() => stuck.every((s) => s.headers > 0), 5000, "response headers on every stream");

    // Each generation moves the target port: a remove and an add of 20 endpoints per stream.
    const rounds = 200;
    const start = performance.now();
    for (let g = 1; g <= rounds; g++) {
      f.apply("endpointslices", slice("ns", "web", eps, ports(g)));
      const r: Update = await victim.next(10_000);
      const a: Update = await victim.next(10_000);
      assert.deepEqual([r.update?.$case, a.update?.$case], ["remove", "add"], `generation ${g}`);
    }
    const took = performance.now() - start;
    await attacker.until(
      () => stuck.every((s) => s.reset !== undefined),
      sendTimeoutMs + 5000,
      "reset of every stuck stream",
    );
    const latest = Math.max(...stuck.map((s) => s.reset!.at)) - start;
    console.log(
      `stuck Get streams reset by ${latest.toFixed(0)} ms; ${rounds} generations took ${took.toFixed(0)} ms`,
    );
    assert.ok(stuck.every((s) => s.reset!.code === H2Error.CANCEL), "reset with CANCEL");
    assert.match(await f.metric("destination_stream_send_timeouts_total"), /rpc="get"} 50/);
    const after = mem("destination server after the attack");
    assert.ok(after - before < 64 * MIB, `heap grew by ${((after - before) / MIB).toFixed(1)} MiB`);

    // Still served afterwards.
    f.apply("endpointslices", slice("ns", "web", eps, ports(0)));
    await victim.next(5000);
    victim.cancel();
    await attacker.close();
  } finally {
    await f.stop();
  }
});

Deno.test("hostile: a Certify request larger than identity's receive limit fails with RESOURCE_EXHAUSTED before the service sees it, others unaffected", async () => {
  const seen: number[] = [];
  // A stand-in for the real service: it records the token size it was given and refuses.
  const service = {
    certify: (req: CertifyRequest) => {
      seen.push(req.token.length);
      return Promise.reject(new RequestError("unauthenticated", "token rejected by the stand-in"));
    },
  } as unknown as CertifyService;
  const srv = await serveIdentityGrpc({ service, registry: new Registry(), address: "127.0.0.1:0" });
  const client = new IdentityClient(`127.0.0.1:${srv.port}`, grpc.credentials.createInsecure());
  const certify = (tokenBytes: number) =>
    new Promise<grpc.ServiceError>((resolve, reject) =>
      client.certify(
        {
          identity: "web.ns.serviceaccount.identity.linkerd.cluster.local",
          token: new Uint8Array(tokenBytes),
          certificateSigningRequest: new Uint8Array(400),
        },
        (err) => err ? resolve(err) : reject(new Error("Certify succeeded against the stand-in")),
      )
    );
  try {
    const big = await certify(CONTROL_SERVER_LIMITS.identity.maxReceiveMessageBytes);
    assert.equal(big.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.deepEqual(seen, [], "the oversized request never reached the service");
    // A realistic request (a 2 KiB token) still reaches the service on the same server.
    const normal = await certify(2048);
    assert.equal(normal.code, grpc.status.UNAUTHENTICATED);
    assert.deepEqual(seen, [2048]);
  } finally {
    client.close();
    await srv.close(100);
  }
});

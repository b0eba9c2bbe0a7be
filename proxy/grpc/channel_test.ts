// GrpcChannel with real grpc-js servers and real sockets on loopback: reconnect with backoff,
// several controller addresses, re-resolution, keepalive against a peer that went silent.
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import * as net from "node:net";
import { connectTcp } from "../transport/connect.ts";
import { GrpcChannel, type GrpcChannelOptions } from "./channel.ts";
import { GrpcClient, type Method } from "./client.ts";
import type { Endpoint } from "./resolve.ts";
import { GrpcError, Status } from "./status.ts";

const raw = { encode: (b: Uint8Array) => ({ finish: () => b }), decode: (b: Uint8Array) => b.slice() };
const WHO: Method<Uint8Array, Uint8Array> = {
  path: "/weft.test.Ctl/Who",
  requestType: raw,
  responseType: raw,
};
const WATCH: Method<Uint8Array, Uint8Array> = {
  path: "/weft.test.Ctl/Watch",
  requestType: raw,
  responseType: raw,
};
const dec = new TextDecoder();

/** A grpc-js "controller" that answers Who with its name and streams Watch ticks until cancelled. */
async function controller(name: string, port = 0) {
  const id = (b: Buffer) => b;
  const m = (path: string, responseStream: boolean) => ({
    path,
    requestStream: false,
    responseStream,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  });
  const server = new grpc.Server();
  let calls = 0;
  server.addService({ who: m(WHO.path, false), watch: m(WATCH.path, true) }, {
    who: (_c: unknown, cb: grpc.sendUnaryData<Buffer>) => {
      calls++;
      cb(null, Buffer.from(name));
    },
    watch: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const t = setInterval(() => call.write(Buffer.from("tick")), 20);
      call.on("cancelled", () => clearInterval(t));
    },
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `127.0.0.1:${port}`,
      grpc.ServerCredentials.createInsecure(),
      (e, p) => e ? reject(e) : resolve(p),
    )
  );
  return { port: bound, calls: () => calls, close: () => server.forceShutdown() };
}

/** A TCP relay to `port` the test can cut (a pod that vanished) or silence (a peer that stopped answering). */
async function relay(port: number) {
  const socks = new Set<net.Socket>();
  let silent = false;
  const server = net.createServer((a) => {
    const b = net.connect({ host: "127.0.0.1", port });
    for (const s of [a, b]) {
      socks.add(s);
      s.on("error", () => {});
      s.on("close", () => socks.delete(s));
    }
    a.on("data", (d) => silent || b.write(d));
    b.on("data", (d) => silent || a.write(d));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    silence: () => (silent = true),
    cut: () => {
      server.close();
      for (const s of socks) s.destroy();
    },
  };
}

function channel(eps: () => Endpoint[], extra: Partial<GrpcChannelOptions> = {}) {
  const log: string[] = [];
  let resolves = 0;
  let connects = 0;
  const ch = new GrpcChannel({
    name: "ctl",
    resolve: () => {
      resolves++;
      return Promise.resolve(eps());
    },
    connect: (ep) => {
      connects++;
      return connectTcp(ep.host, ep.port, 2000);
    },
    backoff: { minMs: 100, maxMs: 400, jitter: 0 },
    reresolveMinMs: 100,
    log: (_level, line) => log.push(line),
    ...extra,
  });
  const client = new GrpcClient(ch.request, { authority: "ctl", scheme: "http" });
  return { ch, client, log, resolves: () => resolves, connects: () => connects };
}

const who = async (c: GrpcClient) => dec.decode(await c.unary(WHO, new Uint8Array(), { timeoutMs: 3000 }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

Deno.test("grpc channel: a controller that is down fails calls at once, backs off, and is used once it is up", async () => {
  const port = await freePort();
  const c = channel(() => [{ host: "127.0.0.1", port }]);
  let ctl: Awaited<ReturnType<typeof controller>> | undefined;
  try {
    const start = performance.now();
    await assert.rejects(
      who(c.client),
      (e) =>
        e instanceof GrpcError && e.code === Status.UNAVAILABLE &&
        /ctl 127\.0\.0\.1:\d+: connect failed/.test(e.details),
    );
    assert.ok(performance.now() - start < 1000, "failed fast, not at the deadline");
    assert.equal(c.connects(), 1);
    // Within the backoff no connect is tried: the call fails without touching the network.
    await assert.rejects(
      who(c.client),
      (e) => e instanceof GrpcError && e.code === Status.UNAVAILABLE && /backing off/.test(e.details),
    );
    assert.equal(c.connects(), 1);
    // After the first delay (100 ms) one more try, still down: the next delay doubles.
    await sleep(120);
    await assert.rejects(who(c.client), (e) => e instanceof GrpcError && e.code === Status.UNAVAILABLE);
    assert.equal(c.connects(), 2);
    assert.ok(c.log.some((l) => /unreachable, next try in 100ms/.test(l)), c.log.join("\n"));
    assert.ok(c.log.some((l) => /unreachable, next try in 200ms/.test(l)), c.log.join("\n"));
    ctl = await controller("a", port);
    await sleep(220);
    assert.equal(await who(c.client), "a");
    assert.ok(c.resolves() >= 2, "the target was resolved again after the failures");
  } finally {
    await c.ch.close();
    ctl?.close();
  }
});

Deno.test("grpc channel: calls spread over every controller address and skip one that is gone", async () => {
  const a = await controller("a");
  const b = await controller("b");
  // Controller a is reached through a relay the test cuts, as a replaced pod vanishes.
  const ra = await relay(a.port);
  const c = channel(() => [{ host: "127.0.0.1", port: ra.port }, { host: "127.0.0.1", port: b.port }]);
  try {
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) seen.push(await who(c.client));
    assert.equal(seen.filter((s) => s === "a").length, 5, seen.join());
    assert.equal(seen.filter((s) => s === "b").length, 5, seen.join());
    ra.cut();
    await sleep(100);
    const before = b.calls();
    for (let i = 0; i < 6; i++) assert.equal(await who(c.client), "b");
    assert.equal(b.calls() - before, 6, "every call went to the controller that is still up");
  } finally {
    await c.ch.close();
    ra.cut();
    a.close();
    b.close();
  }
});

Deno.test("grpc channel: addresses follow re-resolution (a replaced controller pod)", async () => {
  const a = await controller("a");
  const b = await controller("b");
  let eps = [{ host: "127.0.0.1", port: a.port }];
  const c = channel(() => eps);
  try {
    assert.equal(await who(c.client), "a");
    // The Service now points at b; a goes away.
    eps = [{ host: "127.0.0.1", port: b.port }];
    a.close();
    // The call racing the change may fail (the watches retry); then the new address is used.
    let got = "";
    for (let i = 0; i < 20 && got !== "b"; i++) {
      got = await who(c.client).catch(() => "");
      if (got !== "b") await sleep(60);
    }
    assert.equal(got, "b");
    assert.deepEqual(c.ch.addresses, [`127.0.0.1:${b.port}`]);
  } finally {
    await c.ch.close();
    a.close();
    b.close();
  }
});

Deno.test("grpc channel: keepalive ends a stream whose peer went silent (no FIN) with UNAVAILABLE", async () => {
  const a = await controller("a");
  const r = await relay(a.port);
  const c = channel(() => [{ host: "127.0.0.1", port: r.port }], {
    keepAlive: { intervalMs: 100, timeoutMs: 200 },
  });
  try {
    let ticks = 0;
    const start = performance.now();
    const done = c.client.serverStream(WATCH, new Uint8Array(), () => ticks++);
    await sleep(150);
    assert.ok(ticks > 0, "the stream was live");
    r.silence();
    const st = await done;
    const took = performance.now() - start;
    assert.equal(st.code, Status.UNAVAILABLE);
    assert.match(st.details, /no PING ACK within 200ms/);
    assert.ok(took < 1500, `ended after ${took} ms`);
  } finally {
    await c.ch.close();
    r.cut();
    a.close();
  }
});

Deno.test("grpc channel: a closed channel refuses calls and ends its streams", async () => {
  const a = await controller("a");
  const c = channel(() => [{ host: "127.0.0.1", port: a.port }]);
  try {
    const done = c.client.serverStream(WATCH, new Uint8Array(), () => {});
    await sleep(50);
    await c.ch.close();
    assert.equal((await done).code, Status.UNAVAILABLE);
    await assert.rejects(who(c.client), (e) => e instanceof GrpcError && /channel closed/.test(e.details));
  } finally {
    a.close();
  }
});

Deno.test("grpc channel: resolved again on its interval with no failure — a gone address leaves, a new one is used", async () => {
  const a = await controller("a");
  const b = await controller("b");
  let eps = [{ host: "127.0.0.1", port: a.port }];
  const c = channel(() => eps, { reresolveIntervalMs: 100 });
  try {
    assert.equal(await who(c.client), "a");
    const resolved = c.resolves();
    // The Service changes while every call succeeds: nothing fails that would trigger a resolution.
    eps = [{ host: "127.0.0.1", port: b.port }];
    await sleep(350);
    assert.ok(c.resolves() > resolved, "resolved again without a failure");
    assert.deepEqual(c.ch.addresses, [`127.0.0.1:${b.port}`]);
    assert.equal(await who(c.client), "b");
  } finally {
    await c.ch.close();
    a.close();
    b.close();
  }
});

Deno.test("grpc channel: no resolution on an interval when it is off, and none after close", async () => {
  const a = await controller("a");
  const c = channel(() => [{ host: "127.0.0.1", port: a.port }], { reresolveIntervalMs: 0 });
  const d = channel(() => [{ host: "127.0.0.1", port: a.port }], { reresolveIntervalMs: 50 });
  try {
    assert.equal(await who(c.client), "a");
    assert.equal(await who(d.client), "a");
    await d.ch.close();
    const [rc, rd] = [c.resolves(), d.resolves()];
    await sleep(200);
    assert.equal(c.resolves(), rc, "interval off");
    assert.equal(d.resolves(), rd, "closed channel stopped resolving");
  } finally {
    await c.ch.close();
    a.close();
  }
});

Deno.test("grpc channel: an empty answer (no ready replica) keeps the known addresses", async () => {
  const a = await controller("a");
  let eps = [{ host: "127.0.0.1", port: a.port }];
  const c = channel(() => eps, { reresolveIntervalMs: 50 });
  try {
    assert.equal(await who(c.client), "a");
    eps = [];
    const resolved = c.resolves();
    await sleep(200);
    assert.ok(c.resolves() > resolved);
    assert.deepEqual(c.ch.addresses, [`127.0.0.1:${a.port}`]);
    assert.equal(await who(c.client), "a");
  } finally {
    await c.ch.close();
    a.close();
  }
});

// The proxy's gRPC client against real grpc-js servers on loopback: an echo service with raw-byte
// messages, and the fake control plane the data-path tests use (proxy/testing/control_plane.ts).
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import * as net from "node:net";
import { DestinationDefinition, type Update } from "../../proto/gen_messages/destination.ts";
import { TestControlPlane } from "../testing/control_plane.ts";
import { connectTcp } from "../transport/connect.ts";
import { GrpcChannel } from "./channel.ts";
import { GrpcClient, grpcTimeout, type Method, methodOf } from "./client.ts";
import { GrpcError, Status } from "./status.ts";

const raw = {
  encode: (b: Uint8Array) => ({ finish: () => b }),
  decode: (b: Uint8Array) => b.slice(),
};
const echo = (name: string): Method<Uint8Array, Uint8Array> => ({
  path: `/weft.test.Echo/${name}`,
  requestType: raw,
  responseType: raw,
});
const enc = new TextEncoder();
const dec = new TextDecoder();
const text = (b: Uint8Array) => dec.decode(b);

function def(name: string, responseStream: boolean) {
  const id = (b: Buffer) => b;
  return {
    path: `/weft.test.Echo/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  };
}

interface Seen {
  cancelled: string[];
  deadlines: number[];
}

async function echoServer() {
  const seen: Seen = { cancelled: [], deadlines: [] };
  const server = new grpc.Server();
  server.addService({
    unary: def("Unary", false),
    fail: def("Fail", false),
    hang: def("Hang", false),
    big: def("Big", false),
    count: def("Count", true),
    failAfter: def("FailAfter", true),
    forever: def("Forever", true),
  }, {
    unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const d = call.getDeadline();
      // Absolute (ms since the epoch); Infinity when the call has none.
      seen.deadlines.push((d instanceof Date ? d.getTime() : d) - Date.now());
      cb(null, Buffer.concat([Buffer.from("echo:"), call.request]));
    },
    fail: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      cb({ code: grpc.status.NOT_FOUND, details: "no such thing: ünïcode & 100% spaces" });
    },
    hang: (call: grpc.ServerUnaryCall<Buffer, Buffer>) => {
      call.on("cancelled", () => seen.cancelled.push("hang"));
    },
    big: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      cb(null, Buffer.alloc(Number(call.request.toString()), 7));
    },
    count: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const n = Number(call.request.toString());
      for (let i = 0; i < n; i++) call.write(Buffer.from(`item${i}`));
      call.end();
    },
    failAfter: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      call.write(Buffer.from("one"));
      call.write(Buffer.from("two"));
      call.emit("error", { code: grpc.status.FAILED_PRECONDITION, details: "stopped: präcondition" });
    },
    forever: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      let i = 0;
      const t = setInterval(() => call.write(Buffer.from(`tick${i++}`)), 5);
      call.on("cancelled", () => {
        clearInterval(t);
        seen.cancelled.push("forever");
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createInsecure(),
      (e, p) => e ? reject(e) : resolve(p),
    )
  );
  return { seen, port, close: () => server.forceShutdown() };
}

function plainClient(connect: (signal: AbortSignal) => Promise<net.Socket>, authority: string) {
  const channel = new GrpcChannel({
    name: authority,
    resolve: () => Promise.resolve([{ host: "127.0.0.1", port: 0 }]),
    connect: (_ep, signal) => connect(signal),
    backoff: { minMs: 50, maxMs: 200, jitter: 0 },
  });
  return { channel, client: new GrpcClient(channel.request, { authority, scheme: "http" }) };
}

async function setup() {
  const s = await echoServer();
  const { channel, client } = plainClient(() => connectTcp("127.0.0.1", s.port, 2000), `127.0.0.1:${s.port}`);
  return {
    ...s,
    client,
    async close() {
      await channel.close();
      s.close();
    },
  };
}

const waitFor = async (cond: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
};

Deno.test("grpc client: unary call against grpc-js, with its deadline sent as grpc-timeout", async () => {
  const t = await setup();
  try {
    const res = await t.client.unary(echo("Unary"), enc.encode("ping"), { timeoutMs: 5000 });
    assert.equal(text(res), "echo:ping");
    // grpc-js read the deadline from our grpc-timeout.
    assert.ok(
      t.seen.deadlines[0] > 3000 && t.seen.deadlines[0] <= 5000,
      `deadline seen: ${t.seen.deadlines}`,
    );
    // Without a timeout there is no deadline.
    await t.client.unary(echo("Unary"), enc.encode("x"));
    assert.equal(t.seen.deadlines[1], Infinity);
  } finally {
    await t.close();
  }
});

Deno.test("grpc client: server streaming delivers every message in order, then OK", async () => {
  const t = await setup();
  try {
    const got: string[] = [];
    const st = await t.client.serverStream(echo("Count"), enc.encode("50"), (m) => got.push(text(m)));
    assert.equal(st.code, Status.OK);
    assert.deepEqual(got, Array.from({ length: 50 }, (_, i) => `item${i}`));
  } finally {
    await t.close();
  }
});

Deno.test("grpc client: status and message from the trailers after messages", async () => {
  const t = await setup();
  try {
    const got: string[] = [];
    const st = await t.client.serverStream(echo("FailAfter"), enc.encode(""), (m) => got.push(text(m)));
    assert.deepEqual(got, ["one", "two"]);
    assert.deepEqual(st, { code: Status.FAILED_PRECONDITION, details: "stopped: präcondition" });
  } finally {
    await t.close();
  }
});

Deno.test("grpc client: a trailers-only error rejects with the server's code and decoded message", async () => {
  const t = await setup();
  try {
    await assert.rejects(
      t.client.unary(echo("Fail"), enc.encode("x")),
      (e) =>
        e instanceof GrpcError && e.code === Status.NOT_FOUND &&
        e.details === "no such thing: ünïcode & 100% spaces",
    );
    // An unknown method: grpc-js answers UNIMPLEMENTED, trailers-only.
    await assert.rejects(
      t.client.unary(echo("Nope"), enc.encode("x")),
      (e) => e instanceof GrpcError && e.code === Status.UNIMPLEMENTED,
    );
  } finally {
    await t.close();
  }
});

Deno.test("grpc client: an expired deadline ends the call with DEADLINE_EXCEEDED and the server sees it cancelled", async () => {
  const t = await setup();
  try {
    const start = performance.now();
    await assert.rejects(
      t.client.unary(echo("Hang"), enc.encode("x"), { timeoutMs: 200 }),
      (e) =>
        e instanceof GrpcError && e.code === Status.DEADLINE_EXCEEDED &&
        e.details === "/weft.test.Echo/Hang: deadline of 200ms exceeded",
    );
    const took = performance.now() - start;
    assert.ok(took >= 190 && took < 1500, `took ${took} ms`);
    assert.ok(await waitFor(() => t.seen.cancelled.includes("hang")), "server saw the call end");
  } finally {
    await t.close();
  }
});

Deno.test("grpc client: aborting a stream cancels it (RST_STREAM CANCEL reaches grpc-js)", async () => {
  const t = await setup();
  try {
    const abort = new AbortController();
    const got: string[] = [];
    const st = await t.client.serverStream(echo("Forever"), enc.encode(""), (m) => {
      got.push(text(m));
      if (got.length === 3) abort.abort();
    }, { signal: abort.signal });
    assert.equal(st.code, Status.CANCELLED);
    assert.deepEqual(got.slice(0, 3), ["tick0", "tick1", "tick2"]);
    assert.ok(await waitFor(() => t.seen.cancelled.includes("forever")), "server saw the cancel");
    // An already-aborted signal never starts the call.
    const st2 = await t.client.serverStream(echo("Count"), enc.encode("1"), () => {}, {
      signal: abort.signal,
    });
    assert.equal(st2.code, Status.CANCELLED);
  } finally {
    await t.close();
  }
});

Deno.test("grpc client: a message over 4 MiB from the server is refused; the channel keeps serving", async () => {
  const t = await setup();
  try {
    const fits = await t.client.unary(echo("Big"), enc.encode(String(4 * 1024 * 1024)));
    assert.equal(fits.length, 4 * 1024 * 1024);
    await assert.rejects(
      t.client.unary(echo("Big"), enc.encode(String(4 * 1024 * 1024 + 1))),
      (e) =>
        e instanceof GrpcError && e.code === Status.RESOURCE_EXHAUSTED &&
        e.details.includes("message of 4194305 bytes, over this client's limit of 4194304"),
    );
    assert.equal(text(await t.client.unary(echo("Unary"), enc.encode("after"))), "echo:after");
  } finally {
    await t.close();
  }
});

Deno.test("grpc client: Destination.Get from the fake control plane (grpc-js) over its unix socket", async () => {
  const dir = await Deno.makeTempDir();
  const cp = new TestControlPlane(`${dir}/dst.sock`, `${dir}/dst.sock`);
  await cp.start();
  const { channel, client } = plainClient(
    () =>
      new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect({ path: `${dir}/dst.sock` });
        s.once("connect", () => resolve(s));
        s.once("error", reject);
      }),
    "localhost",
  );
  const abort = new AbortController();
  try {
    const ep = (port: number) => ({
      addr: { ip: { ip: { $case: "ipv4" as const, value: 0x0a000001 } }, port },
      weight: 1,
      metricLabels: {},
      tlsIdentity: undefined,
      protocolHint: undefined,
      authorityOverride: undefined,
      http2: undefined,
      resourceRef: undefined,
    });
    cp.setEndpoints("web.demo.svc.cluster.local:80", [ep(8080)]);
    const updates: Update[] = [];
    const done = client.serverStream(
      methodOf(DestinationDefinition, "get"),
      { scheme: "", path: "web.demo.svc.cluster.local:80", contextToken: "" },
      (u) => updates.push(u),
      { signal: abort.signal },
    );
    assert.ok(await waitFor(() => updates.length === 1));
    assert.equal(updates[0].update?.$case, "add");
    cp.setEndpoints("web.demo.svc.cluster.local:80", []);
    assert.ok(await waitFor(() => updates.length === 3), `updates: ${updates.map((u) => u.update?.$case)}`);
    assert.deepEqual(updates.map((u) => u.update?.$case), ["add", "remove", "noEndpoints"]);
    abort.abort();
    assert.equal((await done).code, Status.CANCELLED);
  } finally {
    await channel.close();
    cp.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("grpc-timeout: milliseconds while they fit in 8 digits, then seconds, then hours", () => {
  assert.equal(grpcTimeout(0), "0m");
  assert.equal(grpcTimeout(1500), "1500m");
  assert.equal(grpcTimeout(99_999_999), "99999999m");
  assert.equal(grpcTimeout(100_000_000), "100000S");
  assert.equal(grpcTimeout(1e14), "27777778H");
});

/**
 * A real @grpc/grpc-js client and server talking through one proxy hop (serveHttp2 →
 * Http2Connection): unary, the three streaming kinds, status codes and metadata, cancellation
 * and deadlines.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { startHop } from "./testing.ts";

const id = (b: Buffer) => b;
function method(name: string, requestStream: boolean, responseStream: boolean) {
  return {
    path: `/weft.test.Echo/${name}`,
    requestStream,
    responseStream,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  };
}
const Echo = {
  unary: method("Unary", false, false),
  fail: method("Fail", false, false),
  hang: method("Hang", false, false),
  serverStream: method("ServerStream", false, true),
  clientStream: method("ClientStream", true, false),
  bidi: method("Bidi", true, true),
} satisfies grpc.ServiceDefinition;
const EchoClient = grpc.makeGenericClientConstructor(Echo, "Echo");
type Client = InstanceType<typeof EchoClient> & Record<string, CallableFunction>;

interface Seen {
  cancelled: string[];
}

async function setup() {
  const seen: Seen = { cancelled: [] };
  const server = new grpc.Server();
  server.addService(Echo, {
    unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const tm = new grpc.Metadata();
      tm.set("x-trailer", "from-server");
      const md = new grpc.Metadata();
      md.set("x-echo-meta", String(call.metadata.get("x-meta")[0]));
      call.sendMetadata(md);
      cb(null, Buffer.concat([Buffer.from("echo:"), call.request]), tm);
    },
    fail: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      cb({ code: grpc.status.NOT_FOUND, details: "no such thing: ünïcode & spaces" });
    },
    hang: (call: grpc.ServerUnaryCall<Buffer, Buffer>) => {
      call.on("cancelled", () => seen.cancelled.push("hang"));
    },
    serverStream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const n = Number(call.request.toString());
      let i = 0;
      call.on("cancelled", () => seen.cancelled.push("serverStream"));
      const tick = () => {
        if (call.cancelled) return;
        if (i === n) {
          call.end();
          return;
        }
        call.write(Buffer.from(`item${i++}`));
        setTimeout(tick, 2);
      };
      tick();
    },
    clientStream: (call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      let count = 0;
      let bytes = 0;
      call.on("data", (b: Buffer) => {
        count++;
        bytes += b.length;
      });
      call.on("end", () => cb(null, Buffer.from(`${count}/${bytes}`)));
    },
    bidi: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on("data", (b: Buffer) => call.write(Buffer.concat([Buffer.from("re:"), b])));
      call.on("end", () => call.end());
    },
  });
  const backendPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createInsecure(),
      (e, p) => (e ? reject(e) : resolve(p)),
    )
  );
  const hop = await startHop(backendPort);
  const client = new EchoClient(`127.0.0.1:${hop.port}`, grpc.credentials.createInsecure()) as Client;
  return {
    seen,
    client,
    async close() {
      client.close();
      await hop.close();
      await new Promise<void>((r) => server.tryShutdown(() => r()));
    },
  };
}

function unary(c: Client, name: string, req: Buffer, md = new grpc.Metadata(), opts: grpc.CallOptions = {}) {
  return new Promise<
    { value?: Buffer; error?: grpc.ServiceError; headers?: grpc.Metadata; trailers?: grpc.Metadata }
  >(
    (resolve) => {
      let headers: grpc.Metadata | undefined;
      let trailers: grpc.Metadata | undefined;
      const call = c[name](req, md, opts, (error: grpc.ServiceError | null, value?: Buffer) => {
        // The callback can run before 'status'; wait a tick so trailers are in.
        setTimeout(() => resolve({ value, error: error ?? undefined, headers, trailers }), 0);
      }) as grpc.ClientUnaryCall;
      call.on("metadata", (m: grpc.Metadata) => (headers = m));
      call.on("status", (s: grpc.StatusObject) => (trailers = s.metadata));
    },
  );
}

Deno.test("grpc-js through the h2 hop: unary with metadata both ways and trailing metadata", async () => {
  const t = await setup();
  try {
    const md = new grpc.Metadata();
    md.set("x-meta", "client-value");
    const r = await unary(t.client, "unary", Buffer.from("ping"), md);
    assert.equal(r.error, undefined);
    assert.equal(r.value?.toString(), "echo:ping");
    assert.equal(r.headers?.get("x-echo-meta")[0], "client-value");
    assert.equal(r.trailers?.get("x-trailer")[0], "from-server");
  } finally {
    await t.close();
  }
});

Deno.test("grpc-js through the h2 hop: error status and message arrive unchanged", async () => {
  const t = await setup();
  try {
    const r = await unary(t.client, "fail", Buffer.from("x"));
    assert.equal(r.error?.code, grpc.status.NOT_FOUND);
    assert.equal(r.error?.details, "no such thing: ünïcode & spaces");
  } finally {
    await t.close();
  }
});

Deno.test("grpc-js through the h2 hop: server, client and bidi streaming", async () => {
  const t = await setup();
  try {
    const items = await new Promise<string[]>((resolve, reject) => {
      const out: string[] = [];
      const call = t.client.serverStream(Buffer.from("20")) as grpc.ClientReadableStream<Buffer>;
      call.on("data", (b: Buffer) => out.push(b.toString()));
      call.on("error", reject);
      call.on("end", () => resolve(out));
    });
    assert.deepEqual(items, Array.from({ length: 20 }, (_, i) => `item${i}`));

    const summary = await new Promise<string>((resolve, reject) => {
      const call = t.client.clientStream((e: grpc.ServiceError | null, v?: Buffer) =>
        e ? reject(e) : resolve(v!.toString())
      ) as grpc.ClientWritableStream<Buffer>;
      for (let i = 0; i < 30; i++) call.write(Buffer.alloc(100, i));
      call.end();
    });
    assert.equal(summary, "30/3000");

    const replies = await new Promise<string[]>((resolve, reject) => {
      const out: string[] = [];
      const call = t.client.bidi() as grpc.ClientDuplexStream<Buffer, Buffer>;
      let i = 0;
      const send = () => call.write(Buffer.from(`m${i++}`));
      call.on("data", (b: Buffer) => {
        out.push(b.toString());
        // Ping-pong: the next message only after the reply to the last one.
        if (i < 10) send();
        else call.end();
      });
      call.on("error", reject);
      call.on("end", () => resolve(out));
      send();
    });
    assert.deepEqual(replies, Array.from({ length: 10 }, (_, i) => `re:m${i}`));
  } finally {
    await t.close();
  }
});

Deno.test("grpc-js through the h2 hop: client cancel and deadline reach the server as cancellation", async () => {
  const t = await setup();
  try {
    const cancelled = await new Promise<grpc.ServiceError>((resolve) => {
      const call = t.client.serverStream(Buffer.from("100000")) as grpc.ClientReadableStream<Buffer>;
      let got = 0;
      call.on("data", () => {
        if (++got === 3) call.cancel();
      });
      call.on("error", resolve);
    });
    assert.equal(cancelled.code, grpc.status.CANCELLED);

    const r = await unary(t.client, "hang", Buffer.from("x"), new grpc.Metadata(), {
      deadline: new Date(Date.now() + 200),
    });
    assert.equal(r.error?.code, grpc.status.DEADLINE_EXCEEDED);

    const deadline = Date.now() + 3000;
    while (t.seen.cancelled.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(
      t.seen.cancelled.sort(),
      ["hang", "serverStream"],
      "the server saw both calls cancelled",
    );
  } finally {
    await t.close();
  }
});

// A hostile gRPC server: an HTTP/2 server (the proxy's own h2 server code as a raw h2 server, with
// bodies and trailers written byte by byte by the test) answering with malformed gRPC. Every
// malformation ends its call with a clear status; the channel goes on serving other calls.
import assert from "node:assert/strict";
import * as net from "node:net";
import { DestinationDefinition } from "../../proto/gen_messages/destination.ts";
import { type Body, bytesBody, HeaderList, type HttpResponse, type HttpService } from "../http/message.ts";
import { serveHttp2 } from "../http/h2/server.ts";
import { Http2StreamReset } from "../http/h2/errors.ts";
import { ErrorCode } from "../http/h2/frame.ts";
import { connectTcp } from "../transport/connect.ts";
import { GrpcChannel } from "./channel.ts";
import { GrpcClient, type Method, methodOf } from "./client.ts";
import { GrpcError, Status } from "./status.ts";

const raw = { encode: (b: Uint8Array) => ({ finish: () => b }), decode: (b: Uint8Array) => b.slice() };
const m = (name: string): Method<Uint8Array, Uint8Array> => ({
  path: `/weft.test.Hostile/${name}`,
  requestType: raw,
  responseType: raw,
});
const enc = new TextEncoder();
const GRPC = ["content-type", "application/grpc"];
const ok = () => new HeaderList(["grpc-status", "0"]);
const grpc = (chunks: Uint8Array[], trailers?: HeaderList): HttpResponse => ({
  status: 200,
  headers: new HeaderList([...GRPC]),
  body: bytesBody(chunks, trailers),
});
const u8 = (...n: number[]) => new Uint8Array(n);

/** A body that sends `first` and then never ends, until cancelled (as a server streaming junk). */
function endless(first: Uint8Array, cancelled: () => void): Body {
  let sent = false;
  const never = Promise.withResolvers<Uint8Array | null>();
  return {
    length: undefined,
    trailers: undefined,
    read: () => {
      if (!sent) {
        sent = true;
        return Promise.resolve(first);
      }
      return never.promise;
    },
    cancel: () => {
      cancelled();
      never.resolve(null);
    },
  };
}

async function hostileServer() {
  const seen = { cancelledOversize: false, tickerCancelled: false };
  const routes: Record<string, () => HttpResponse> = {
    Good: () => grpc([u8(0, 0, 0, 0, 2, 111, 107)], ok()),
    Compressed: () => grpc([u8(1, 0, 0, 0, 1, 42)], ok()),
    Oversize: () => ({
      status: 200,
      headers: new HeaderList([...GRPC]),
      body: endless(u8(0, 0x7f, 0xff, 0xff, 0xff), () => (seen.cancelledOversize = true)),
    }),
    Truncated: () => grpc([u8(0, 0, 0, 0, 10, 1, 2, 3)]),
    TruncatedWithTrailers: () => grpc([u8(0, 0, 0, 0, 10, 1, 2, 3)], ok()),
    BadStatus: () => grpc([], new HeaderList(["grpc-status", "abc"])),
    BigStatus: () => grpc([], new HeaderList(["grpc-status", "99", "grpc-message", "x"])),
    NoStatus: () => grpc([u8(0, 0, 0, 0, 0)], new HeaderList(["x-other", "1"])),
    NoTrailers: () => grpc([u8(0, 0, 0, 0, 0)]),
    NotGrpc: () => ({
      status: 200,
      headers: new HeaderList(["content-type", "text/html"]),
      body: bytesBody([enc.encode("<html>")]),
    }),
    Http503: () => ({ status: 503, headers: new HeaderList(), body: bytesBody([enc.encode("busy")]) }),
    TwoForUnary: () => grpc([u8(0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 2)], ok()),
    Garbage: () => grpc([u8(0, 0, 0, 0, 3, 0xff, 0xff, 0xff)], ok()),
    // One message, then RST_STREAM ENHANCE_YOUR_CALM instead of trailers.
    ResetMidBody: () => {
      let n = 0;
      return {
        status: 200,
        headers: new HeaderList([...GRPC]),
        body: {
          length: undefined,
          trailers: undefined,
          read: () =>
            n++ === 0
              ? Promise.resolve(u8(0, 0, 0, 0, 1, 9))
              : Promise.reject(new Http2StreamReset("calm down", ErrorCode.ENHANCE_YOUR_CALM)),
          cancel: () => {},
        },
      };
    },
    Ticker: () => {
      let i = 0;
      let stop = false;
      return {
        status: 200,
        headers: new HeaderList([...GRPC]),
        body: {
          length: undefined,
          trailers: undefined,
          read: () =>
            stop
              ? Promise.resolve(null)
              : new Promise((r) => setTimeout(() => r(u8(0, 0, 0, 0, 1, i++ & 0xff)), 5)),
          cancel: () => {
            stop = true;
            seen.tickerCancelled = true;
          },
        },
      };
    },
  };
  const service: HttpService = (req) => {
    req.body.cancel();
    const name = req.path.split("/").pop()!;
    const route = routes[name];
    return Promise.resolve(route ? route() : grpc([], new HeaderList(["grpc-status", "12"])));
  };
  const conns = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    conns.add(sock);
    sock.on("close", () => conns.delete(sock));
    sock.on("error", () => {});
    serveHttp2(sock, service);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as net.AddressInfo).port;
  let connects = 0;
  const channel = new GrpcChannel({
    name: "hostile",
    resolve: () => Promise.resolve([{ host: "127.0.0.1", port }]),
    connect: (ep) => {
      connects++;
      return connectTcp(ep.host, ep.port, 2000);
    },
    backoff: { minMs: 50, maxMs: 200, jitter: 0 },
  });
  const client = new GrpcClient(channel.request, { authority: "hostile", scheme: "http" });
  return {
    client,
    seen,
    connects: () => connects,
    async close() {
      await channel.close();
      for (const c of conns) c.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function statusOf(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof GrpcError, `a GrpcError, got ${e}`);
    return { code: e.code, details: e.details };
  }
  assert.fail("the call succeeded");
}

Deno.test("hostile gRPC server: each malformed response ends its call with a clear status, the channel keeps serving", async () => {
  const t = await hostileServer();
  // A long stream on the same connection, to show the others do not disturb it.
  const ticks: number[] = [];
  const stop = new AbortController();
  const ticker = t.client.serverStream(m("Ticker"), u8(), (b) => ticks.push(b[0]), { signal: stop.signal });
  try {
    const cases: [string, number, RegExp][] = [
      ["Compressed", Status.INTERNAL, /sent a compressed message, but this client asked for no compression/],
      [
        "Oversize",
        Status.RESOURCE_EXHAUSTED,
        /message of 2147483647 bytes, over this client's limit of 4194304/,
      ],
      ["Truncated", Status.INTERNAL, /response ended inside a message \(3 of a 10-byte message\)/],
      ["TruncatedWithTrailers", Status.INTERNAL, /ended inside a message/],
      ["BadStatus", Status.UNKNOWN, /unreadable grpc-status "abc"/],
      ["BigStatus", Status.UNKNOWN, /grpc-status 99, which is not a gRPC status code/],
      ["NoStatus", Status.UNKNOWN, /Hostile\/NoStatus: the server ended the call without a grpc-status/],
      ["NoTrailers", Status.UNKNOWN, /without a grpc-status/],
      ["NotGrpc", Status.UNKNOWN, /content-type "text\/html" is not application\/grpc/],
      ["Http503", Status.UNAVAILABLE, /HTTP status 503 instead of a gRPC response/],
      ["TwoForUnary", Status.INTERNAL, /more than one response message for a unary call/],
      ["ResetMidBody", Status.RESOURCE_EXHAUSTED, /reset by peer \(ENHANCE_YOUR_CALM\)/],
    ];
    for (const [name, code, details] of cases) {
      const start = performance.now();
      const s = await statusOf(t.client.unary(m(name), u8()));
      assert.equal(s.code, code, `${name}: ${JSON.stringify(s)}`);
      assert.match(s.details, details, name);
      assert.ok(s.details.startsWith(`/weft.test.Hostile/${name}`), `${name} names the method: ${s.details}`);
      assert.ok(performance.now() - start < 2000, `${name} ended promptly`);
      // Good calls still work between the bad ones, on the same connection.
      assert.equal(new TextDecoder().decode(await t.client.unary(m("Good"), u8())), "ok");
    }
    // The oversize body was not waited for: its stream was reset while the server still "sent".
    assert.equal(t.seen.cancelledOversize, true);
    // A message that is not the protobuf it should be.
    const s = await statusOf(
      t.client.unary(
        { ...methodOf(DestinationDefinition, "get"), path: "/weft.test.Hostile/Garbage" },
        { scheme: "", path: "x", contextToken: "" },
      ),
    );
    assert.equal(s.code, Status.INTERNAL);
    assert.match(s.details, /cannot decode a response message/);
    const before = ticks.length;
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(ticks.length > before, "the long stream kept receiving throughout");
    assert.equal(t.connects(), 1, "one connection carried everything: no call's failure cost the connection");
  } finally {
    stop.abort();
    assert.equal((await ticker).code, Status.CANCELLED);
    await t.close();
  }
});

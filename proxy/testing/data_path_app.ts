/**
 * HTTP and gRPC programs the HTTP data-path test runs inside its network namespaces (the last
 * line of output is one JSON object):
 *
 *   http-server <port>...     HTTP/1.1 echo: answers JSON {port, method, path, headers, body};
 *                             `/slow/<ms>` waits first; `/status/<code>` answers that status;
 *                             `/toggle-fail` makes this port answer 500 to everything else until
 *                             toggled back; `/fail-once/<key>` answers 500 to the first request
 *                             for `key` (over all ports) and 200 after, with `seen` (requests for
 *                             `key` so far); `/slowport/<port>/<ms>` waits only on that port
 *   grpc-server <port>...     grpc-js: /weft.test.Echo/Unary echoes `<port>:<request>` with a
 *                             trailer `x-port`; /weft.test.Echo/Stream sends N replies (N = request);
 *                             /weft.test.Echo/Slow answers after N ms
 *   http-load <json>          {url, n, method?, body?, headers?, gapMs?}: n requests over one kept-alive
 *                             connection; prints {statuses, ports, first}
 *   upgrade <json>            {host, port, messages}: `GET /ws` with `Upgrade: echo`, then each
 *                             message and its echo; prints {status, headers, echoes, closed}
 *   raw <json>                {host, port, requests: [{name, wire}]}: each wire (latin1) on a new
 *                             connection; prints [{name, status, connection, proxyError, closed}]
 *   grpc-call <json>          {addr, n, concurrency?, stream?, close?, slowMs?}: n unary calls
 *                             (to Slow with `slowMs` when given)
 *                             (`concurrency` at a time) then one server stream of `stream`
 *                             replies on one channel; `close` closes the channel (GOAWAY) before
 *                             exiting; prints {ok, codes, ports, trailers, reply, streamed}
 */
import * as grpc from "@grpc/grpc-js";
import * as http from "node:http";
import { Buffer } from "node:buffer";
import type { Duplex } from "node:stream";
import { RawClient } from "../http/h1/testing.ts";

const raw = {
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};
const SERVICE: grpc.ServiceDefinition = {
  Unary: { path: "/weft.test.Echo/Unary", requestStream: false, responseStream: false, ...raw },
  Stream: { path: "/weft.test.Echo/Stream", requestStream: false, responseStream: true, ...raw },
  Slow: { path: "/weft.test.Echo/Slow", requestStream: false, responseStream: false, ...raw },
};

function print(o: unknown): void {
  console.log(JSON.stringify(o));
}

function httpServer(ports: number[]): void {
  const failing = new Set<number>();
  const seen = new Map<string, number>();
  const paths: string[] = [];
  for (const port of ports) {
    const s = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const path = req.url ?? "";
        if (path === "/seen-paths") {
          res.end(JSON.stringify({ port, paths }));
          return;
        }
        paths.push(path);
        if (path === "/toggle-fail") {
          if (failing.has(port)) failing.delete(port);
          else failing.add(port);
          res.end(JSON.stringify({ port, failing: failing.has(port) }));
          return;
        }
        const slow = /^\/slow\/(\d+)/.exec(path);
        if (slow) await new Promise((r) => setTimeout(r, Number(slow[1])));
        const slowPort = /^\/slowport\/(\d+)\/(\d+)/.exec(path);
        if (slowPort && Number(slowPort[1]) === port) {
          await new Promise((r) => setTimeout(r, Number(slowPort[2])));
        }
        const once = /\/fail-once\/([^/?]+)/.exec(path);
        const n = once ? (seen.get(once[1]) ?? 0) + 1 : 0;
        if (once) seen.set(once[1], n);
        const status = /^\/status\/(\d+)/.exec(path);
        res.statusCode = failing.has(port) || n === 1 ? 500 : status ? Number(status[1]) : 200;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({
          port,
          method: req.method,
          path,
          version: req.httpVersion,
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
          seen: n,
        }));
      });
    });
    // `Upgrade: echo` switches to a byte echo; the 101 names the port.
    s.on("upgrade", (req: http.IncomingMessage, sock: Duplex, head: Buffer) => {
      if (req.headers.upgrade !== "echo") {
        sock.end("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
      }
      sock.write(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: upgrade\r\nx-port: ${port}\r\n\r\n`,
      );
      const echo = (b: Buffer) => sock.write(b);
      if (head.length > 0) echo(head);
      sock.on("data", echo);
      sock.on("end", () => sock.end());
      sock.on("error", () => {});
    });
    s.keepAliveTimeout = 60_000;
    s.listen(port, "0.0.0.0");
  }
  print({ listening: ports });
}

async function grpcServer(ports: number[]): Promise<void> {
  for (const port of ports) {
    const server = new grpc.Server();
    server.addService(SERVICE, {
      Unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        const md = new grpc.Metadata();
        md.set("x-port", String(port));
        const id = call.metadata.get("l5d-client-id")[0];
        md.set("x-client-id", String(id ?? ""));
        cb(null, Buffer.from(`${port}:${call.request.toString()}`), md);
      },
      Slow: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        setTimeout(() => cb(null, Buffer.from(`${port}:slow`)), Number(call.request.toString()));
      },
      Stream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        const n = Number(call.request.toString());
        let i = 0;
        const next = () => {
          if (i >= n) {
            const md = new grpc.Metadata();
            md.set("x-port", String(port));
            call.end(md);
            return;
          }
          call.write(Buffer.from(`${port}:${i++}`));
          setTimeout(next, 5);
        };
        next();
      },
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(
        `0.0.0.0:${port}`,
        grpc.ServerCredentials.createInsecure(),
        (e) => e ? reject(e) : resolve(),
      )
    );
  }
  print({ listening: ports });
}

async function httpLoad(spec: {
  url: string;
  n: number;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Pause between requests. */
  gapMs?: number;
}): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const statuses: Record<string, number> = {};
  const ports: Record<string, number> = {};
  const sockets = new Set<unknown>();
  let first: unknown;
  for (let i = 0; i < spec.n; i++) {
    if (i > 0 && spec.gapMs) await new Promise((r) => setTimeout(r, spec.gapMs));
    const r = await new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }>(
      (resolve) => {
        const req = http.request(spec.url, {
          agent,
          method: spec.method ?? "GET",
          headers: spec.headers,
          timeout: spec.timeoutMs ?? 10_000,
        }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on(
            "end",
            () =>
              resolve({
                status: res.statusCode ?? 0,
                body: Buffer.concat(chunks).toString(),
                headers: res.headers,
              }),
          );
          res.on("error", () => resolve({ status: -1, body: "", headers: {} }));
        });
        req.on("socket", (s) => sockets.add(s));
        req.on("timeout", () => req.destroy(new Error("timeout")));
        req.on("error", (e) => resolve({ status: 0, body: e.message, headers: {} }));
        req.end(spec.body);
      },
    );
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    let parsed: { port?: number } | string = r.body;
    try {
      parsed = JSON.parse(r.body);
    } catch { /* not JSON: an error text from the proxy */ }
    if (typeof parsed === "object" && parsed.port) ports[parsed.port] = (ports[parsed.port] ?? 0) + 1;
    if (i === 0) first = { status: r.status, body: parsed, headers: r.headers };
  }
  agent.destroy();
  print({ statuses, ports, first, connections: sockets.size });
}

async function grpcCall(
  spec: { addr: string; n: number; concurrency?: number; stream?: number; close?: boolean; slowMs?: number },
): Promise<void> {
  const client = new grpc.Client(spec.addr, grpc.credentials.createInsecure());
  const codes: Record<string, number> = {};
  const ports: Record<string, number> = {};
  let trailers: Record<string, unknown> | undefined;
  let reply: string | undefined;
  let details: string | undefined;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const call = client.makeUnaryRequest(
        spec.slowMs !== undefined ? SERVICE.Slow.path : SERVICE.Unary.path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(spec.slowMs !== undefined ? String(spec.slowMs) : `hello-${i}`),
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
        (err: grpc.ServiceError | null, value?: Buffer) => {
          codes[err ? err.code : 0] = (codes[err ? err.code : 0] ?? 0) + 1;
          if (err) details = err.details;
          if (value) {
            reply = value.toString();
            const p = reply.split(":")[0];
            ports[p] = (ports[p] ?? 0) + 1;
          }
        },
      );
      call.on("status", (s: grpc.StatusObject) => {
        trailers = s.metadata.getMap();
        resolve();
      });
    });
  // `concurrency` calls at a time, all on the channel's one HTTP/2 connection.
  const width = Math.max(1, spec.concurrency ?? 1);
  for (let i = 0; i < spec.n; i += width) {
    const batch = [];
    for (let k = i; k < Math.min(spec.n, i + width); k++) batch.push(one(k));
    await Promise.all(batch);
  }
  let streamed: string[] | undefined;
  let streamCode: number | undefined;
  if (spec.stream !== undefined) {
    streamed = [];
    await new Promise<void>((resolve) => {
      const call = client.makeServerStreamRequest(
        SERVICE.Stream.path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(String(spec.stream)),
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
      );
      call.on("data", (b: Buffer) => streamed!.push(b.toString()));
      call.on("error", () => {});
      call.on("status", (s: grpc.StatusObject) => {
        streamCode = s.code;
        resolve();
      });
    });
  }
  print({ ok: true, codes, ports, trailers, reply, details, streamed, streamCode });
  // Without `close`, the process exits with the channel open (the connection ends with a FIN
  // and no GOAWAY); see the HTTP data-path test for why that is the default there.
  if (!spec.close) Deno.exit(0);
  client.close();
}

/** Sends each raw request on its own connection and reports the answer and whether the peer closed. */
async function rawRequests(spec: { host: string; port: number; requests: { name: string; wire: string }[] }) {
  const out = [];
  for (const { name, wire } of spec.requests) {
    const c = await RawClient.connect(spec.port, spec.host);
    try {
      c.send(wire);
      const r = await c.response();
      out.push({
        name,
        status: r.status,
        connection: r.headers["connection"],
        proxyError: r.headers["l5d-proxy-error"],
        closed: await c.serverClosed(),
      });
    } catch (e) {
      out.push({ name, error: (e as Error).message });
    } finally {
      c.destroy();
    }
  }
  print(out);
}

/** An HTTP/1.1 Upgrade, then bytes both ways on the switched connection, then a half-close. */
async function upgradeEcho(spec: { host: string; port: number; messages: string[] }) {
  const c = await RawClient.connect(spec.port, spec.host);
  try {
    c.send(
      `GET /ws HTTP/1.1\r\nhost: ${spec.host}:${spec.port}\r\nupgrade: echo\r\nconnection: upgrade\r\n\r\n`,
    );
    const head = await c.response({ head: true });
    const echoes: string[] = [];
    if (head.status === 101) {
      for (const m of spec.messages) {
        c.send(m);
        // Wait until this one has come back whole.
        if (!await c.waitFor((s) => s.length >= m.length)) break;
        echoes.push(c.take());
      }
      c.sock.end();
    }
    print({ status: head.status, headers: head.headers, echoes, closed: await c.serverClosed() });
  } finally {
    c.destroy();
  }
}

const [mode, ...args] = Deno.args;
switch (mode) {
  case "http-server":
    httpServer(args.map(Number));
    break;
  case "grpc-server":
    await grpcServer(args.map(Number));
    break;
  case "http-load":
    await httpLoad(JSON.parse(args[0]));
    break;
  case "grpc-call":
    await grpcCall(JSON.parse(args[0]));
    break;
  case "raw":
    await rawRequests(JSON.parse(args[0]));
    break;
  case "upgrade":
    await upgradeEcho(JSON.parse(args[0]));
    break;
  default:
    console.error(`unknown mode ${mode}`);
    Deno.exit(2);
}

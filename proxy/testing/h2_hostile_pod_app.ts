/**
 * Programs for the HTTP/2 hostile-peer test through meshed pods (proxy/hostile_h2_data_path_test.ts),
 * run inside network namespaces. Each prints JSON lines.
 *
 *   serve <port>                      h2c (node:http2): GET /big streams 1 GiB (as fast as flow
 *                                     control lets it), anything else answers "ok".
 *   stall <socket|window> <host> <port> <seconds>
 *                                     raw HTTP/2 client asking for /big. socket: opens both windows
 *                                     to 1 GiB, reads 256 KiB, then never reads the socket again
 *                                     while it sends a request and 20 PINGs every 50 ms. window:
 *                                     keeps reading but never sends WINDOW_UPDATE. Prints
 *                                     {"stalled":true}, exits after `seconds`.
 *   flood <ping|rapid-reset|made-you-reset> <host> <port>
 *                                     floods for at most 10 s; prints {"goaway": code | null,
 *                                     "closed": bool, "sent": frames}.
 *   good <host> <port> <n>            n requests to "/" over one node:http2 connection, 20 ms apart;
 *                                     prints {"statuses": {...}}.
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import {
  call,
  concat,
  errorCode,
  FLAG,
  FRAME,
  frame,
  hpackLiteral,
  RawH2Client,
} from "../http/h2/testing.ts";

const GIB = 1 << 30;
const print = (v: unknown) => console.log(JSON.stringify(v));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const u32 = (v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v);
  return b;
};
const get = (id: number, host: string, path: string) =>
  frame(
    FRAME.HEADERS,
    FLAG.END_HEADERS | FLAG.END_STREAM,
    id,
    hpackLiteral([[":method", "GET"], [":scheme", "http"], [":path", path], [":authority", host]]),
  );

function serve(port: number): void {
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  const server = http2.createServer();
  server.on("session", (s) => s.on("error", () => {}));
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    stream.on("error", () => {});
    if (headers[":path"] !== "/big") {
      stream.respond({ ":status": 200 });
      stream.end("ok");
      return;
    }
    stream.respond({ ":status": 200, "content-length": String(GIB) });
    let sent = 0;
    const pump = () => {
      while (sent < GIB && !stream.destroyed) {
        sent += chunk.length;
        if (!stream.write(chunk)) return;
      }
      if (sent >= GIB) stream.end();
    };
    stream.on("drain", pump);
    pump();
  });
  server.listen(port, "0.0.0.0", () => print({ listening: port }));
}

async function connect(host: string, port: number): Promise<RawH2Client> {
  const sock = net.connect({ host, port });
  await new Promise<void>((resolve, reject) => {
    sock.once("connect", () => resolve());
    sock.once("error", reject);
  });
  return RawH2Client.over(sock);
}

async function stall(kind: string, host: string, port: number, seconds: number): Promise<void> {
  const raw = await connect(host, port);
  const end = Date.now() + seconds * 1000;
  if (kind === "socket") {
    raw.write(
      frame(FRAME.SETTINGS, 0, 0, new Uint8Array([0, 4, ...u32(2 ** 30)])),
      frame(FRAME.WINDOW_UPDATE, 0, 0, u32(2 ** 30 - 65_535)),
    );
  }
  raw.write(get(1, host, "/big"));
  const received = () =>
    raw.frames.filter((f) => f.type === FRAME.DATA).reduce((n, f) => n + f.payload.length, 0);
  const want = kind === "socket" ? 256 * 1024 : 1;
  while (received() < want && Date.now() < end && !raw.closed) await sleep(10);
  if (kind === "socket") raw.pauseReading();
  // What we got so far is not needed: do not hold it in this process.
  raw.frames.length = 0;
  print({ stalled: true, closed: raw.closed });
  const ping = frame(FRAME.PING, 0, 0, new Uint8Array(8));
  for (let id = 3; Date.now() < end; id += 2) {
    if (kind === "socket" && raw.writableLength < 1 << 20) {
      raw.write(concat([get(id, host, "/"), ...Array.from({ length: 20 }, () => ping)]));
    }
    if (kind === "window") raw.frames.length = 0;
    await sleep(50);
  }
  raw.destroy();
  Deno.exit(0);
}

async function flood(kind: string, host: string, port: number): Promise<void> {
  const raw = await connect(host, port);
  await raw.waitFor((f) => f.type === FRAME.SETTINGS);
  const ping = frame(FRAME.PING, 0, 0, new Uint8Array(8));
  const end = Date.now() + 10_000;
  let sent = 0;
  let id = 1;
  while (Date.now() < end && !raw.closed && !raw.frames.some((f) => f.type === FRAME.GOAWAY)) {
    const parts: Uint8Array[] = [];
    for (let k = 0; k < 100; k++) {
      if (kind === "ping") parts.push(ping);
      else if (kind === "rapid-reset") parts.push(get(id, host, "/"), frame(FRAME.RST_STREAM, 0, id, u32(8)));
      else parts.push(get(id, host, "/"), frame(FRAME.WINDOW_UPDATE, 0, id, u32(0)));
      id += 2;
      sent++;
    }
    raw.write(concat(parts));
    // Only the frames this reads matter: drop the answers so far.
    const goaway = raw.frames.find((f) => f.type === FRAME.GOAWAY);
    raw.frames.length = 0;
    if (goaway) raw.frames.push(goaway);
    await sleep(5);
  }
  const g = await raw.waitFor((f) => f.type === FRAME.GOAWAY, 3000);
  await raw.waitFor(() => false, 3000); // until closed
  print({ goaway: g ? errorCode(g) : null, closed: raw.closed, sent });
  raw.destroy();
  Deno.exit(0);
}

async function good(host: string, port: number, n: number): Promise<void> {
  const s = http2.connect(`http://${host}:${port}`);
  s.on("error", () => {});
  const statuses: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    let key: string;
    try {
      const r = await Promise.race([
        call(s, { ":path": "/", ":authority": `${host}:${port}` }),
        sleep(5000).then(() => undefined),
      ]);
      key = r ? String(r.status) : "timeout";
    } catch (e) {
      key = (e as Error).message;
    }
    statuses[key] = (statuses[key] ?? 0) + 1;
    await sleep(20);
  }
  print({ statuses });
  s.destroy();
  Deno.exit(0);
}

const [cmd, ...rest] = Deno.args;
switch (cmd) {
  case "serve":
    serve(Number(rest[0]));
    break;
  case "stall":
    await stall(rest[0], rest[1], Number(rest[2]), Number(rest[3]));
    break;
  case "flood":
    await flood(rest[0], rest[1], Number(rest[2]));
    break;
  case "good":
    await good(rest[0], Number(rest[1]), Number(rest[2]));
    break;
  default:
    console.error(`unknown command ${cmd}`);
    Deno.exit(2);
}

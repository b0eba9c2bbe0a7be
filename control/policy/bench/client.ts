/**
 * One benchmark client process: opens the watch streams it is given (as proxies open them, one
 * HTTP/2 connection per few hundred streams), and reports each message's receive time on its own
 * `performance.now()` clock over stdout; the controller process maps that clock onto its own with
 * the ping exchange answered here. Messages are not decoded: the benchmark's resources carry a
 * `rev-N` marker (a route path prefix) that is found in the bytes, which keeps this process cheap.
 *
 * stdin (JSON lines): {"streams": [...]} once, then {"ping": n} and finally {"final": true}.
 * stdout: {"ready": n}, {"pong": n, "t": ms}, {"m": [[stream, rev, ms], ...]}, {"final": {...}}.
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { LineWriter, readLines } from "./lines.ts";
import { connectionsFor, replicaOfConnection } from "./placement.ts";

export interface StreamSpec {
  /** Index of the stream in the whole run. */
  id: number;
  /** Full gRPC method path. */
  path: string;
  /** The request message, encoded, as base64. */
  req: string;
}

const MARK = Buffer.from("rev-");
/** A client process never outlives a stuck run by long. */
const HARD_LIMIT_MS = 15 * 60_000;

/** The `N` of the first `rev-N` in a message, or -1 when it carries none. */
export function revOf(b: Uint8Array): number {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const i = buf.indexOf(MARK);
  if (i < 0) return -1;
  let n = 0, j = i + MARK.length, digits = 0;
  while (j < buf.length && buf[j] >= 48 && buf[j] <= 57) {
    n = n * 10 + buf[j++] - 48;
    digits++;
  }
  return digits > 0 ? n : -1;
}

/** `ports`: one per controller replica; connection c of this process is `firstConnection + c` overall. */
async function main(ports: number[], firstConnection: number) {
  const out = new LineWriter(Deno.stdout.writable);
  const lines = readLines(Deno.stdin.readable);
  const first = await lines.next();
  if (first.done) return;
  const specs = (JSON.parse(first.value) as { streams: StreamSpec[] }).streams;
  const channels = Array.from(
    { length: connectionsFor(specs.length) },
    (_, c) =>
      new grpc.Client(
        `127.0.0.1:${ports[replicaOfConnection(firstConnection + c, ports.length)]}`,
        grpc.credentials.createInsecure(),
        {
          // A connection of its own per client, as separate proxies have.
          "grpc.use_local_subchannel_pool": 1,
        },
      ),
  );
  const last = new Map<number, number>();
  const errors: Record<string, number> = {};
  let pending: [number, number, number][] = [];
  let seen = 0;
  let readySent = false;
  const calls: grpc.ClientReadableStream<Buffer>[] = [];
  specs.forEach((s, i) => {
    const call = channels[i % channels.length].makeServerStreamRequest(
      s.path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from(s.req, "base64"),
    ) as grpc.ClientReadableStream<Buffer>;
    call.on("data", (b: Buffer) => {
      const t = performance.now();
      const rev = revOf(b);
      if (!last.has(s.id)) seen++;
      last.set(s.id, rev);
      pending.push([s.id, rev, t]);
    });
    call.on("error", (e: grpc.ServiceError) => {
      if (e.code === grpc.status.CANCELLED && e.details?.includes("Cancelled on client")) return;
      const k = grpc.status[e.code] ?? String(e.code);
      errors[k] = (errors[k] ?? 0) + 1;
    });
    calls.push(call);
  });
  const flush = setInterval(() => {
    if (pending.length > 0) {
      out.send({ m: pending });
      pending = [];
    }
    if (!readySent && seen === specs.length) {
      readySent = true;
      out.send({ ready: seen });
    }
  }, 20);
  const hard = setTimeout(() => Deno.exit(3), HARD_LIMIT_MS);
  for await (const line of lines) {
    const cmd = JSON.parse(line) as { ping?: number; final?: boolean };
    if (cmd.ping !== undefined) await out.send({ pong: cmd.ping, t: performance.now() });
    if (cmd.final) break;
  }
  clearInterval(flush);
  if (pending.length > 0) await out.send({ m: pending });
  await out.send({ final: { last: [...last.entries()], errors } });
  for (const c of calls) c.cancel();
  for (const c of channels) c.close();
  clearTimeout(hard);
  await out.close();
  Deno.exit(0);
}

if (import.meta.main) {
  const a = Deno.args.find((x) => x.startsWith("--ports="));
  if (!a) throw new Error("client.ts: --ports=N[,N...] is required");
  const ports = a.split("=")[1].split(",").map(Number);
  if (ports.some((p) => !Number.isInteger(p) || p <= 0)) throw new Error(`client.ts: bad ${a}`);
  const f = Deno.args.find((x) => x.startsWith("--first-connection="));
  await main(ports, f ? Number(f.split("=")[1]) : 0);
}

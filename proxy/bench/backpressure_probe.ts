/**
 * Probe: does Deno's node:net / node:tls backpressure tell the truth when the peer stops reading?
 * Run: `deno run -A proxy/bench/backpressure_probe.ts`. Loopback only, bounded in time.
 *
 * 1. A server writes 64 KiB chunks to a client that never reads (a Deno.Conn nobody reads from),
 *    waiting for 'drain' whenever write() returns false. Prints bytes accepted, writableLength and
 *    RSS over time. Honest backpressure: accepted bytes stop near kernel buffers + highWaterMark.
 * 2. The same while ignoring write()'s return value: writableLength must grow with what is queued.
 * 3. The forward pump: a fast writer sends into the proxy, forward() writes to a reader that never
 *    reads. Honest pause(): the writer's bytes stop being taken, RSS stays flat.
 */
import * as net from "node:net";
import * as tls from "node:tls";
import type { Duplex } from "node:stream";
import { forward } from "../transport/forward.ts";
import { createTestCa } from "../testing/certs.ts";
import { tlsReadGate } from "../transport/tls_flow.ts";

const CHUNK = new Uint8Array(64 * 1024).fill(120);
const SECONDS = Number(Deno.env.get("PROBE_SECONDS") ?? "4");
const mib = (n: number) => (n / 1048576).toFixed(1);
const rss = () => mib(Deno.memoryUsage().rss);

async function sleep(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/** Writes to `sock` until `until`; honours write()'s return value unless `ignore`. */
async function writeLoop(label: string, sock: Duplex, ignore: boolean): Promise<void> {
  let accepted = 0, falses = 0, drains = 0;
  sock.on("drain", () => drains++);
  sock.on("error", () => {});
  const t0 = Date.now();
  let nextReport = 0;
  let waiting = false;
  while (Date.now() - t0 < SECONDS * 1000) {
    if (!waiting) {
      const ok = sock.write(CHUNK);
      accepted += CHUNK.length;
      if (!ok) {
        falses++;
        if (!ignore) {
          waiting = true;
          sock.once("drain", () => waiting = false);
        }
      }
    }
    // Yield so I/O runs; ignoring backpressure writes about 64 MiB/s at most (bounded).
    await sleep(ignore ? 1 : 0);
    if (Date.now() - t0 >= nextReport) {
      console.log(
        `${label} t=${((Date.now() - t0) / 1000).toFixed(1)}s accepted=${mib(accepted)}MiB ` +
          `writableLength=${mib(sock.writableLength)}MiB falses=${falses} drains=${drains} rss=${rss()}MiB`,
      );
      nextReport += 1000;
    }
    if (ignore && accepted >= 256 * 1048576) break;
  }
  sock.destroy();
}

async function tcpPair(): Promise<{ server: Promise<net.Socket>; client: Deno.TcpConn; close(): void }> {
  let resolve!: (s: net.Socket) => void;
  const server = new Promise<net.Socket>((r) => resolve = r);
  const srv = net.createServer((s) => resolve(s));
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const client = await Deno.connect({ hostname: "127.0.0.1", port: (srv.address() as net.AddressInfo).port });
  return { server, client, close: () => srv.close() };
}

/** A TLS server socket as the proxy makes them: on an accepted net.Socket, optionally gated. */
function tlsServer(
  leaf: { keyPem: string; certChainPem: string },
  gated: boolean,
  onSecure: (s: tls.TLSSocket) => void,
): net.Server {
  const ctx = tls.createSecureContext({ key: leaf.keyPem, cert: leaf.certChainPem, minVersion: "TLSv1.3" });
  return net.createServer({ allowHalfOpen: true }, (raw) => {
    const g = gated ? tlsReadGate(raw) : undefined;
    const t = new tls.TLSSocket(g?.transport ?? raw, { isServer: true, secureContext: ctx });
    t.once("secure", () => {
      g?.gate(t);
      onSecure(t);
    });
  });
}

async function tlsPair(
  gated: boolean,
): Promise<{ server: Promise<tls.TLSSocket>; client: Deno.TlsConn; close(): void }> {
  const ca = await createTestCa("probe-ca");
  const leaf = await ca.issue("localhost");
  let resolve!: (s: tls.TLSSocket) => void;
  const server = new Promise<tls.TLSSocket>((r) => resolve = r);
  const srv = tlsServer(leaf, gated, resolve);
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  // Deno's own TLS client reads only when asked: after the handshake nothing reads it.
  const client = await Deno.connectTls({ hostname: "localhost", port, caCerts: [ca.certPem] });
  await client.handshake();
  return { server, client, close: () => srv.close() };
}

async function probeWriter(kind: "tcp" | "tls" | "tls-gated", ignore: boolean): Promise<void> {
  const p = kind === "tcp" ? await tcpPair() : await tlsPair(kind === "tls-gated");
  await writeLoop(`${kind}${ignore ? " ignore-return" : " honour-return"}`, await p.server, ignore);
  p.client.close();
  p.close();
}

/** A Deno.Conn writer sends as fast as the proxy takes; forward() writes to a reader that never reads. */
async function probeForward(): Promise<void> {
  // The slow reader: accepted by a Deno listener and never read.
  const sinkL = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const sinkAccept = sinkL.accept();
  let fwdFrom: net.Socket | undefined;
  const proxy = net.createServer((inbound) => {
    fwdFrom = inbound;
    const out = net.connect((sinkL.addr as Deno.NetAddr).port, "127.0.0.1");
    forward(inbound, out);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  const writer = await Deno.connect({
    hostname: "127.0.0.1",
    port: (proxy.address() as net.AddressInfo).port,
  });
  const sink = await sinkAccept;
  let sent = 0;
  const stop = Date.now() + SECONDS * 1000;
  const pump = (async () => {
    try {
      while (Date.now() < stop) sent += await writer.write(CHUNK);
    } catch { /* closed at the end */ }
  })();
  for (let t = 0; t < SECONDS; t++) {
    await sleep(1000);
    console.log(
      `forward t=${t + 1}s writer-sent=${mib(sent)}MiB readableLength(in)=${
        mib(fwdFrom?.readableLength ?? 0)
      }MiB ` +
        `rss=${rss()}MiB`,
    );
  }
  writer.close();
  sink.close();
  await pump;
  sinkL.close();
  proxy.close();
}

/** A node:tls client that pause()s after the handshake; a server writes to it honouring write(). */
async function probeTlsPausedReader(): Promise<void> {
  const ca = await createTestCa("probe-ca");
  const leaf = await ca.issue("probe.local");
  let resolve!: (s: tls.TLSSocket) => void;
  const server = new Promise<tls.TLSSocket>((r) => resolve = r);
  const srv = tls.createServer(
    { key: leaf.keyPem, cert: leaf.certChainPem, minVersion: "TLSv1.3" },
    (s) => resolve(s),
  );
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  const client = tls.connect({ host: "127.0.0.1", port, servername: "probe.local", ca: ca.certPem });
  await new Promise<void>((r, j) => {
    client.once("secureConnect", r);
    client.once("error", j);
  });
  client.pause();
  const s = await server;
  const t = setInterval(
    () => console.log(`  paused node:tls reader readableLength=${mib(client.readableLength)}MiB`),
    1000,
  );
  await writeLoop("tls paused-node:tls-reader", s, false);
  clearInterval(t);
  client.destroy();
  srv.close();
}

/** forward() from a node:tls server socket (fast Deno TLS writer) to a TCP reader that never reads. */
async function probeForwardTls(gated: boolean): Promise<void> {
  const ca = await createTestCa("probe-ca");
  const leaf = await ca.issue("localhost");
  const sinkL = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const sinkAccept = sinkL.accept();
  let fwdFrom: tls.TLSSocket | undefined;
  const proxy = tlsServer(leaf, gated, (inbound) => {
    fwdFrom = inbound;
    const out = net.connect((sinkL.addr as Deno.NetAddr).port, "127.0.0.1");
    forward(inbound, out);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  const port = (proxy.address() as net.AddressInfo).port;
  const writer = await Deno.connectTls({ hostname: "localhost", port, caCerts: [ca.certPem] });
  await writer.handshake();
  const sink = await sinkAccept;
  let sent = 0;
  const stop = Date.now() + SECONDS * 1000;
  const pump = (async () => {
    try {
      while (Date.now() < stop) sent += await writer.write(CHUNK);
    } catch { /* closed at the end */ }
  })();
  for (let t = 0; t < SECONDS; t++) {
    await sleep(1000);
    console.log(
      `forward-from-tls${gated ? "-gated" : ""} t=${t + 1}s writer-sent=${mib(sent)}MiB readableLength(in)=${
        mib(fwdFrom?.readableLength ?? 0)
      }MiB rss=${rss()}MiB`,
    );
  }
  writer.close();
  sink.close();
  await pump;
  sinkL.close();
  proxy.close();
}

console.log(`deno ${Deno.version.deno} baseline rss=${rss()}MiB`);
await probeWriter("tcp", false);
await probeWriter("tcp", true);
await probeWriter("tls", false);
await probeWriter("tls", true);
await probeWriter("tls-gated", false);
await probeForward();
await probeTlsPausedReader();
await probeForwardTls(false);
await probeForwardTls(true);

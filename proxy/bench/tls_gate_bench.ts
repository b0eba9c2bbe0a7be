/**
 * What the TLS read gate (transport/tls_flow.ts) costs: TLS 1.3 on loopback with both ends
 * ungated (as MeshTls was before the gate), gated on the TCP handle (what MeshTls does), or on the
 * JS Duplex fallback. Run: `deno run -A proxy/bench/tls_gate_bench.ts`. Prints round trips/s for
 * 16 connections ping-ponging 200 bytes, and MiB/s for one 512 MiB transfer, per variant.
 */
import * as net from "node:net";
import * as tls from "node:tls";
import { createTestCa } from "../testing/certs.ts";
import { GatedTransport, tlsReadGate } from "../transport/tls_flow.ts";

const ca = await createTestCa("gate-bench");
const leaf = await ca.issue("b.bench");
const serverCtx = tls.createSecureContext({
  key: leaf.keyPem,
  cert: leaf.certChainPem,
  minVersion: "TLSv1.3",
});
const SECONDS = 3;
const BULK = 512 * 1048576;

type Handler = (t: tls.TLSSocket) => void;
type Variant = "ungated" | "handle" | "duplex";

function transport(v: Variant, raw: net.Socket): { socket: net.Socket; gate(t: tls.TLSSocket): void } {
  if (v === "ungated") return { socket: raw, gate: () => {} };
  if (v === "handle") {
    const g = tlsReadGate(raw);
    return { socket: g.transport, gate: (t) => g.gate(t) };
  }
  const d = new GatedTransport(raw);
  return { socket: d as unknown as net.Socket, gate: (t) => d.gate(t) };
}

async function serve(v: Variant, onSecure: Handler): Promise<net.Server> {
  const srv = net.createServer({ allowHalfOpen: true }, (raw) => {
    const g = transport(v, raw);
    const t = new tls.TLSSocket(g.socket, { isServer: true, secureContext: serverCtx });
    t.once("secure", () => {
      g.gate(t);
      onSecure(t);
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return srv;
}

async function dial(v: Variant, port: number): Promise<tls.TLSSocket> {
  const raw = net.connect({ host: "127.0.0.1", port, noDelay: true, allowHalfOpen: true });
  const g = transport(v, raw);
  const t = tls.connect({ socket: g.socket, servername: "b.bench", ca: ca.certPem });
  await new Promise<void>((r, j) => {
    t.once("secureConnect", r);
    t.once("error", j);
  });
  g.gate(t);
  return t;
}

async function pingPong(gated: Variant): Promise<number> {
  const srv = await serve(gated, (t) => t.on("data", (d) => t.write(d)));
  const port = (srv.address() as net.AddressInfo).port;
  const conns = await Promise.all(Array.from({ length: 16 }, () => dial(gated, port)));
  const msg = new Uint8Array(200).fill(1);
  let n = 0;
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(conns.map((s) =>
    new Promise<void>((done) => {
      s.on("data", () => {
        n++;
        if (performance.now() < end) s.write(msg);
        else done();
      });
      s.write(msg);
    })
  ));
  for (const c of conns) c.destroy();
  srv.close();
  return n / SECONDS;
}

async function bulk(gated: Variant): Promise<number> {
  let finished!: () => void;
  const all = new Promise<void>((r) => finished = r);
  const srv = await serve(gated, (t) => {
    let got = 0;
    t.on("data", (d: Uint8Array) => {
      got += d.length;
      if (got >= BULK) finished();
    });
  });
  const s = await dial(gated, (srv.address() as net.AddressInfo).port);
  const chunk = new Uint8Array(64 * 1024).fill(1);
  const t0 = performance.now();
  let sent = 0;
  const go = () => {
    while (sent < BULK) {
      sent += chunk.length;
      if (!s.write(chunk)) return void s.once("drain", go);
    }
  };
  go();
  await all;
  const mibs = BULK / 1048576 / ((performance.now() - t0) / 1000);
  s.destroy();
  srv.close();
  return mibs;
}

for (const v of ["ungated", "handle", "duplex", "ungated", "handle", "duplex"] as const) {
  const rt = await pingPong(v);
  console.log(`${v.padEnd(8)} ping-pong ${rt.toFixed(0)}/s, bulk ${(await bulk(v)).toFixed(0)} MiB/s`);
}
Deno.exit(0);

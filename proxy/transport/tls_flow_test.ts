import assert from "node:assert/strict";
import * as net from "node:net";
import { CertStore } from "../core/cert_store.ts";
import { createTestCa } from "../testing/certs.ts";
import { forward } from "./forward.ts";
import { MeshTls } from "./tls.ts";
import { GatedTransport } from "./tls_flow.ts";
import * as tls from "node:tls";

const ca = await createTestCa("tls-flow-test");
const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const B = "b.ns.serviceaccount.identity.linkerd.cluster.local";
const CHUNK = new Uint8Array(64 * 1024).fill(7);
/** Far more than socket buffers hold; far less than an unpaused reader takes in the window. */
const BOUND = 48 * 1024 * 1024;
const WINDOW_MS = 2000;

async function mesh(name: string): Promise<MeshTls> {
  const s = new CertStore();
  s.set(await ca.issue(name));
  return new MeshTls(s);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes as fast as `sock` takes bytes (honouring 'drain') until stopped; returns the count. */
function flood(sock: net.Socket): { sent(): number; stop(): void } {
  let sent = 0;
  let on = true;
  const go = () => {
    while (on && !sock.destroyed) {
      sent += CHUNK.length;
      if (!sock.write(CHUNK)) return void sock.once("drain", go);
    }
  };
  sock.on("error", () => {});
  go();
  return { sent: () => sent, stop: () => on = false };
}

/** Floods for WINDOW_MS, then stops; returns how many bytes the flood got in. */
async function sentInWindow(f: { sent(): number; stop(): void }): Promise<number> {
  await sleep(WINDOW_MS);
  const sent = f.sent();
  f.stop();
  return sent;
}

/** A mesh TLS connection from `client` to B's server on loopback `port`. */
async function connectToB(client: MeshTls, port: number): Promise<net.Socket> {
  const { socket } = await client.connect({
    host: "127.0.0.1",
    port,
    serverName: B,
    expectedIdentity: B,
    timeoutMs: 2000,
  });
  return socket;
}

/** A mesh TLS server for B on loopback: the first connection goes to `first`, later ones are echoed. */
async function serveB(
  first: (socket: net.Socket) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = await mesh(B);
  let firstSeen = false;
  const srv = net.createServer({ allowHalfOpen: true }, async (raw) => {
    const t = await server.accept(raw, [], 2000);
    if (!firstSeen) {
      firstSeen = true;
      first(t.socket);
    } else {
      t.socket.on("data", (d) => t.socket.write(d));
      t.socket.on("end", () => t.socket.end());
    }
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return {
    port: (srv.address() as net.AddressInfo).port,
    close: () => new Promise((r) => srv.close(() => r())),
  };
}

/** A loopback destination that accepts connections and never reads from them. */
function blackhole(): { port: number; close(): void } {
  const sink = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const c of sink) conns.push(c);
  })();
  return {
    port: (sink.addr as Deno.NetAddr).port,
    close: () => {
      for (const c of conns) c.close();
      sink.close();
    },
  };
}

/** A mesh TLS client echoing one message, to show the server still serves others. */
async function echoOnce(client: MeshTls, port: number, msg: string): Promise<string> {
  const socket = await connectToB(client, port);
  return await new Promise((resolve, reject) => {
    let s = "";
    socket.on("data", (d) => s += d);
    socket.on("end", () => resolve(s));
    socket.on("error", reject);
    socket.end(msg);
  });
}

Deno.test("hostile: a mesh TLS peer flooding a forward to a reader that never reads is held back by TCP", async () => {
  const client = await mesh(A);
  // The destination accepts and never reads.
  const sink = blackhole();
  const srv = await serveB((tlsSocket) => forward(tlsSocket, net.connect(sink.port, "127.0.0.1")));
  try {
    const socket = await connectToB(client, srv.port);
    const sent = await sentInWindow(flood(socket));
    console.log(`flooding client got ${(sent / 1048576).toFixed(1)} MiB in before the stall held it`);
    assert.ok(sent < BOUND, `the proxy side took ${sent} bytes for a destination that reads nothing`);
    assert.equal(await echoOnce(client, srv.port, "still here"), "still here");
    socket.destroy();
  } finally {
    sink.close();
    await srv.close();
  }
});

Deno.test("hostile: a mesh TLS server flooding a paused client socket is held back by TCP", async () => {
  const client = await mesh(A);
  let floods: { sent(): number; stop(): void } | undefined;
  const srv = await serveB((tlsSocket) => floods = flood(tlsSocket));
  try {
    const socket = await connectToB(client, srv.port);
    // A consumer that stops reading, the way forward() and the HTTP/1 reader pause a source.
    let got = 0;
    socket.on("data", (d: Uint8Array) => {
      got += d.length;
      if (got >= 256 * 1024) socket.pause();
    });
    await sleep(WINDOW_MS);
    const sent = floods!.sent();
    floods!.stop();
    console.log(`flooding server got ${(sent / 1048576).toFixed(1)} MiB in to a paused client`);
    assert.ok(sent < BOUND, `the paused client side took ${sent} bytes`);
    // Resuming lets the bytes flow again.
    const atPause = got;
    socket.resume();
    await sleep(200);
    assert.ok(got > atPause, "no bytes arrived after resume()");
    assert.equal(await echoOnce(client, srv.port, "still here"), "still here");
    socket.destroy();
  } finally {
    await srv.close();
  }
});

Deno.test("hostile: a mesh TLS peer flooding a socket nobody has started reading is held back by TCP", async () => {
  const client = await mesh(A);
  // The proxy sometimes holds an accepted TLS socket before anyone reads it (policy lookup,
  // connecting upstream); it stays unread here for the whole window.
  const held: net.Socket[] = [];
  const srv = await serveB((tlsSocket) => held.push(tlsSocket));
  try {
    const socket = await connectToB(client, srv.port);
    const sent = await sentInWindow(flood(socket));
    console.log(`flooding client got ${(sent / 1048576).toFixed(1)} MiB in to an unread socket`);
    assert.ok(sent < BOUND, `the unread side took ${sent} bytes`);
    // Starting to read gets the bytes flowing.
    let got = 0;
    held[0].on("data", (d: Uint8Array) => got += d.length);
    await sleep(200);
    assert.ok(got > 0, "no bytes arrived once the socket was read");
    assert.equal(await echoOnce(client, srv.port, "still here"), "still here");
    socket.destroy();
    held[0].destroy();
  } finally {
    await srv.close();
  }
});

Deno.test("hostile: the Duplex fallback gate also holds a TLS flood into a stalled forward", async () => {
  const leaf = await ca.issue(B);
  const ctx = tls.createSecureContext({ key: leaf.keyPem, cert: leaf.certChainPem, minVersion: "TLSv1.3" });
  const sink = blackhole();
  const srv = net.createServer({ allowHalfOpen: true }, (raw) => {
    const g = new GatedTransport(raw);
    const t = new tls.TLSSocket(g as unknown as net.Socket, { isServer: true, secureContext: ctx });
    t.once("secure", () => {
      g.gate(t);
      forward(t, net.connect(sink.port, "127.0.0.1"));
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const socket = tls.connect({
      host: "127.0.0.1",
      port: (srv.address() as net.AddressInfo).port,
      servername: B,
      ca: ca.certPem,
    });
    await new Promise((r) => socket.once("secureConnect", r));
    const sent = await sentInWindow(flood(socket));
    console.log(`flooding client got ${(sent / 1048576).toFixed(1)} MiB in through the fallback gate`);
    assert.ok(sent < BOUND, `the fallback gate let ${sent} bytes in`);
    socket.destroy();
  } finally {
    sink.close();
    await new Promise((r) => srv.close(r));
  }
});

import assert from "node:assert/strict";
import * as net from "node:net";
import { forward } from "./forward.ts";
import { connectTcp } from "./connect.ts";
import { listenTcp } from "./listen.ts";
import { ConnTracker } from "./conn_tracker.ts";
import { decodeSockaddr, LinuxOrigDst, normalizeIp } from "./orig_dst.ts";

/** An echo server that answers only after the client half-closes (so half-close must pass). */
async function replyOnEnd(): Promise<{ port: number; close: () => void }> {
  const srv = net.createServer({ allowHalfOpen: true }, (s) => {
    let got = "";
    s.on("data", (d) => got += d);
    s.on("end", () => s.end(`got ${got.length} bytes`));
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

Deno.test("forward: bytes both ways with half-close, counted", async () => {
  const upstream = await replyOnEnd();
  let up = 0, down = 0;
  let closedWith: unknown = "not closed";
  const tracker = new ConnTracker();
  const l = await listenTcp({ ip: "127.0.0.1", port: 0 }, async (sock) => {
    tracker.add(sock);
    const u = await connectTcp("127.0.0.1", upstream.port, 1000);
    forward(sock, u, { aToB: (n) => up += n, bToA: (n) => down += n, closed: (e) => closedWith = e });
  });
  try {
    const big = "x".repeat(1 << 20);
    const c = await connectTcp("127.0.0.1", l.addr.port, 1000);
    const reply = await new Promise<string>((resolve) => {
      let s = "";
      c.on("data", (d) => s += d);
      c.on("end", () => resolve(s));
      c.end(big);
    });
    assert.equal(reply, `got ${1 << 20} bytes`);
    assert.ok(await tracker.drain(1000), "connection closed after both sides ended");
    assert.equal(up, 1 << 20);
    assert.equal(down, reply.length);
    assert.equal(closedWith, undefined);
  } finally {
    await l.close();
    upstream.close();
  }
});

Deno.test("conn tracker: drain gives up at the limit and closes what is left", async () => {
  const tracker = new ConnTracker();
  const l = await listenTcp({ ip: "127.0.0.1", port: 0 }, (s) => tracker.add(s));
  const c = await connectTcp("127.0.0.1", l.addr.port, 1000);
  c.on("error", () => {});
  while (tracker.size === 0) await new Promise((r) => setTimeout(r, 5));
  const ended = new Promise((r) => c.once("end", r));
  assert.equal(await tracker.drain(50), false);
  await ended;
  c.destroy();
  await l.close();
});

Deno.test("orig dst: sockaddr decoding and the accepted socket's fd", async () => {
  const v4 = new Uint8Array(16);
  v4.set([2, 0, 0x1f, 0x90, 10, 1, 2, 3]);
  assert.deepEqual(decodeSockaddr(v4), { ip: "10.1.2.3", port: 8080 });
  const v6 = new Uint8Array(28);
  v6.set([10, 0, 0x10, 0xeb]);
  v6.set([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 8);
  assert.deepEqual(decodeSockaddr(v6), { ip: "fd00::1", port: 4331 });
  assert.equal(normalizeIp("::ffff:10.0.0.1"), "10.0.0.1");

  const od = new LinuxOrigDst();
  const accepted: net.Socket[] = [];
  const srv = net.createServer((s) => accepted.push(s));
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const c = net.connect((srv.address() as net.AddressInfo).port, "127.0.0.1");
  while (accepted.length === 0) await new Promise((r) => setTimeout(r, 5));
  const fd = od.track(accepted[0]);
  assert.ok(fd !== undefined && fd > 2, "found the accepted socket's fd");
  assert.equal(od.findFd({ remoteAddress: "127.0.0.1", remotePort: 1, localPort: 1 }), undefined);
  c.destroy();
  accepted[0].destroy();
  srv.close();
  od.close();
});

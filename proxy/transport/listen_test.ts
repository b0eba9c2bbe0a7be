import assert from "node:assert/strict";
import * as net from "node:net";
import { listenTcp } from "./listen.ts";

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

Deno.test("listener close stops accepting at once and leaves established connections to the drain", async () => {
  const accepted: net.Socket[] = [];
  const l = await listenTcp({ ip: "127.0.0.1", port: 0 }, (s) => accepted.push(s));
  const client = await connect(l.addr.port);
  try {
    while (accepted.length === 0) await new Promise((r) => setTimeout(r, 5));
    let closed = false;
    let guard: ReturnType<typeof setTimeout> | undefined;
    const closing = l.close().then(() => closed = true);
    await Promise.race([closing, new Promise((r) => guard = setTimeout(r, 2000))]);
    clearTimeout(guard);
    assert.ok(closed, "close() resolved while a connection was still open");
    await assert.rejects(connect(l.addr.port), "no new connection is accepted");
    // The established connection still carries bytes both ways.
    const echoed = new Promise<string>((r) => client.once("data", (d) => r(String(d))));
    accepted[0].once("data", (d) => accepted[0].write(d));
    client.write("still here");
    assert.equal(await echoed, "still here");
  } finally {
    client.destroy();
    for (const s of accepted) s.destroy();
  }
});

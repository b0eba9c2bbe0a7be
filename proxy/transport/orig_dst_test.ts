import assert from "node:assert/strict";
import * as net from "node:net";
import { LinuxOrigDst, OrigDstError } from "./orig_dst.ts";

/** Accepts `n` loopback connections and hands each accepted socket to `f` while it is open. */
async function withAccepted(n: number, f: (sock: net.Socket) => void): Promise<void> {
  const srv = net.createServer((sock) => {
    sock.on("error", () => {});
    try {
      f(sock);
    } finally {
      sock.end();
    }
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  try {
    for (let i = 0; i < n; i++) {
      await new Promise<void>((resolve) => {
        const c = net.connect(port, "127.0.0.1");
        c.on("error", () => resolve());
        c.on("close", () => resolve());
        c.resume();
      });
    }
  } finally {
    await new Promise((r) => srv.close(r));
  }
}

const libc = Deno.dlopen("libc.so.6", { close: { parameters: ["i32"], result: "i32" } } as const);
const openFds = () => [...Deno.readDirSync("/proc/self/fd")].length;

Deno.test("orig_dst: the fd Deno's TCP handle duplicates is the accepted socket itself", async () => {
  const od = new LinuxOrigDst();
  try {
    let checked = 0;
    await withAccepted(3, (sock) => {
      const dup = od.dupFd(sock);
      assert.ok(dup !== undefined, "Deno's TCP handle gives no fd (fdForIpc): lookups fall back to scanning");
      // The scan finds every fd with this peer and port: the original and the duplicate.
      const target = Deno.readLinkSync(`/proc/self/fd/${dup}`);
      const found = od.findFd(sock);
      assert.ok(found !== undefined);
      assert.equal(Deno.readLinkSync(`/proc/self/fd/${found}`), target, "the duplicate is another socket");
      assert.match(target, /^socket:\[\d+\]$/);
      libc.symbols.close(dup);
      checked++;
    });
    assert.equal(checked, 3);
  } finally {
    od.close();
  }
});

Deno.test("orig_dst: lookups close the fd they borrow (300 connections leave no fd behind)", async () => {
  const od = new LinuxOrigDst();
  try {
    const before = openFds();
    let answered = 0;
    await withAccepted(300, (sock) => {
      // Loopback without a redirect: the kernel answers with the address dialled or with no NAT
      // entry, depending on connection tracking; either way the lookup must not keep the fd.
      try {
        const dst = od.lookup(sock);
        assert.equal(dst.port, sock.localPort);
      } catch (e) {
        assert.ok(e instanceof OrigDstError, String(e));
      }
      answered++;
    });
    assert.equal(answered, 300);
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(openFds() <= before + 2, `fds before ${before}, after ${openFds()}`);
  } finally {
    od.close();
  }
});

/**
 * The GOAWAY guard: frame rewriting across every chunk split, and the crash it prevents (in a
 * child process, since the crash aborts the process). The crash itself is not certain on every
 * connection, so the evidence that a bare server dies is a script, not a test:
 * `deno run -A proxy/http/h2/goaway_crash_check.ts`.
 */
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import type * as net from "node:net";
import { guardGoaway } from "./goaway_guard.ts";
import { concat, FRAME, frame, PREFACE } from "./testing.ts";
import { alive, connectClient, startChild, useAndGoaway } from "./goaway_child.ts";

function goaway(code: number): Uint8Array {
  const p = new Uint8Array(8);
  new DataView(p.buffer).setUint32(0, 0);
  new DataView(p.buffer).setUint32(4, code);
  return frame(FRAME.GOAWAY, 0, 0, p);
}

Deno.test("guardGoaway: rewrites only GOAWAY frame types, at every chunk split, and reports the code", async () => {
  const settings = frame(FRAME.SETTINGS, 0, 0, new Uint8Array(6));
  const data = frame(FRAME.DATA, 1, 1, new Uint8Array([7, 7, 7, 7, 7, 7, 7, 7, 7, 7]));
  // A DATA payload that contains the bytes of a GOAWAY header must not be touched.
  const tricky = frame(FRAME.DATA, 0, 3, goaway(2));
  const stream = concat([
    PREFACE,
    settings,
    data,
    tricky,
    goaway(11),
    frame(FRAME.PING, 0, 0, new Uint8Array(8)),
  ]);
  const goawayAt = PREFACE.length + settings.length + data.length + tricky.length + 3;
  for (let split = 1; split < stream.length; split++) {
    const sock = new PassThrough() as unknown as net.Socket;
    const reports: number[] = [];
    guardGoaway(sock, true, (g) => reports.push(g.code));
    const input = stream.slice();
    const seen: Uint8Array[] = [];
    sock.on("data", (c: Uint8Array) => seen.push(c.slice()));
    sock.emit("data", input.subarray(0, split));
    sock.emit("data", input.subarray(split));
    await Promise.resolve();
    const out = concat(seen);
    const want = stream.slice();
    want[goawayAt] = 0xfa;
    assert.deepEqual(out, want, `split at ${split}`);
    assert.deepEqual(reports, [11], `split at ${split}`);
  }
});

Deno.test("guardGoaway: bytes already buffered in the socket (a peek) are scanned too", async () => {
  const sock = new PassThrough();
  sock.pause();
  sock.write(concat([PREFACE, goaway(0)]));
  await new Promise((r) => setTimeout(r, 10));
  const reports: number[] = [];
  guardGoaway(sock as unknown as net.Socket, true, (g) => reports.push(g.code));
  const out: Uint8Array[] = [];
  sock.on("data", (c: Uint8Array) => out.push(c));
  sock.resume();
  await new Promise((r) => setTimeout(r, 10));
  const b = concat(out);
  assert.equal(b[PREFACE.length + 3], 0xfa);
  assert.deepEqual(reports, [0]);
});

Deno.test("serveHttp2 survives clients closing busy connections with GOAWAY", async () => {
  const child = await startChild("guarded");
  try {
    for (let round = 0; round < 5; round++) {
      await useAndGoaway(child.port);
      if (!(await alive(child.proc))) {
        assert.fail(`server process died in round ${round}: ${await child.stderr}`);
      }
    }
    const s = await connectClient(child.port);
    s.destroy();
  } finally {
    try {
      child.proc.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.proc.status;
    await child.stderr;
  }
});

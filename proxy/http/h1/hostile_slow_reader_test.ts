/**
 * Slow readers against the HTTP/1 server on real sockets: a client that stops reading must hold
 * back what the server produces for it (TCP fills, the writer waits for 'drain' and stops pulling),
 * while other clients keep being served.
 */
import assert from "node:assert/strict";
import { type Body, HeaderList, type HttpService, textResponse } from "../message.ts";
import { RawClient, sleep, startServer } from "./testing.ts";

const MIB = 1024 * 1024;
const CHUNK = 64 * 1024;
/** Several times what loopback socket buffers hold (about 4 MiB); a writer ignoring drain makes 50+ MiB. */
const BOUND = 16 * MIB;
const WINDOW_MS = 2000;

/**
 * An endless body whose chunks are made only when the writer asks; counts what it made. Each chunk
 * comes a timer tick later, so a writer that did not wait for 'drain' would run away, not hang.
 */
function endless(made: { bytes: number }): Body {
  return {
    length: undefined,
    trailers: undefined,
    read() {
      made.bytes += CHUNK;
      return new Promise((r) => setTimeout(() => r(new Uint8Array(CHUNK)), 0));
    },
    cancel() {},
  };
}

/** A client that sends `wire` and never reads a byte back. */
async function nonReader(port: number, wire: string): Promise<Deno.Conn> {
  const c = await Deno.connect({ hostname: "127.0.0.1", port });
  await c.write(new TextEncoder().encode(wire));
  return c;
}

async function wellBehaved(port: number): Promise<number> {
  const c = await RawClient.connect(port);
  try {
    c.send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n");
    return (await c.response()).status;
  } finally {
    c.destroy();
  }
}

Deno.test("hostile: a client that never reads an endless response body only gets what TCP holds", async () => {
  const made = { bytes: 0 };
  const service: HttpService = (req) =>
    Promise.resolve(
      req.path === "/small"
        ? textResponse(200, "ok")
        : { status: 200, headers: new HeaderList(), body: endless(made) },
    );
  const server = await startServer(service);
  const c = await nonReader(server.port, "GET /endless HTTP/1.1\r\nHost: x\r\n\r\n");
  try {
    await sleep(WINDOW_MS);
    console.log(
      `endless body: the server made ${(made.bytes / MIB).toFixed(1)} MiB for a client that reads nothing`,
    );
    assert.ok(made.bytes > 0, "the response never started");
    assert.ok(made.bytes < BOUND, `the server made ${made.bytes} bytes nobody reads`);
    assert.equal(await wellBehaved(server.port), 200);
  } finally {
    c.close();
    await server.close();
  }
});

Deno.test("hostile: pipelined requests whose 1 MiB responses are never read stop being read", async () => {
  let answered = 0;
  const service: HttpService = (req) => {
    if (req.path === "/small") return Promise.resolve(textResponse(200, "ok"));
    answered++;
    return Promise.resolve({ status: 200, headers: new HeaderList(), body: oneMiB() });
  };
  const server = await startServer(service);
  // 2,000 small requests (about 70 KiB on the wire) asking for 2 GiB of answers.
  const c = await nonReader(server.port, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2000));
  try {
    await sleep(WINDOW_MS);
    console.log(`pipelining: ${answered} of 2000 responses made for a client that reads nothing`);
    assert.ok(answered > 0, "no request was answered");
    assert.ok(
      answered * MIB < BOUND,
      `${answered} MiB of responses were made for a client that reads nothing`,
    );
    assert.equal(await wellBehaved(server.port), 200);
  } finally {
    c.close();
    await server.close();
  }
});

/** A fresh 1 MiB body of known length, in 64 KiB chunks. */
function oneMiB(): Body {
  let left = MIB;
  return {
    length: MIB,
    trailers: undefined,
    read() {
      if (left === 0) return Promise.resolve(null);
      left -= CHUNK;
      return Promise.resolve(new Uint8Array(CHUNK));
    },
    cancel() {},
  };
}

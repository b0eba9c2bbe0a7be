import assert from "node:assert/strict";
import { awaitReady, parseAwaitArgs } from "./await.ts";

Deno.test("weft-await returns once /ready answers 200, and names the last answer on timeout", async () => {
  let calls = 0;
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    (req) => {
      assert.equal(new URL(req.url).pathname, "/ready");
      return new Response("", { status: ++calls < 3 ? 503 : 200 });
    },
  );
  try {
    const port = server.addr.port;
    await awaitReady({ port, path: "/ready", timeoutMs: 5000, intervalMs: 10 });
    assert.equal(calls, 3);
    calls = -1000; // stays 503
    await assert.rejects(
      () => awaitReady({ port, path: "/ready", timeoutMs: 100, intervalMs: 10 }),
      new RegExp(`http://127\\.0\\.0\\.1:${port}/ready not ready after 100ms \\(last: HTTP 503\\)`),
    );
  } finally {
    ac.abort();
    await server.finished;
  }
  // Nothing listening: the connection error is the last answer.
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = closed.addr.port;
  closed.close();
  await assert.rejects(
    () => awaitReady({ port, path: "/ready", timeoutMs: 80, intervalMs: 10 }),
    /not ready after 80ms \(last: .*refused/i,
  );
});

Deno.test("weft-await arguments: the injector's postStart and preStop forms", () => {
  assert.deepEqual(parseAwaitArgs(["--timeout=120s", "--port=4191"]), {
    kind: "await",
    opts: { port: 4191, path: "/ready", timeoutMs: 120_000, intervalMs: 200 },
  });
  assert.deepEqual(parseAwaitArgs(["sleep", "5"]), { kind: "sleep", ms: 5000 });
  assert.throws(() => parseAwaitArgs(["--port=0"]), /--port: "0" is not a port/);
  assert.throws(() => parseAwaitArgs(["sleep", "soon"]), /usage: weft-await/);
  assert.throws(() => parseAwaitArgs(["--timeout=forever"]), /--timeout: "forever" is not a duration/);
});

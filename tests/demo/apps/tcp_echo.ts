/**
 * The demo's raw TCP service: a line echo. Each line a client sends comes back as `<pod> <line>`; the client
 * speaks first, so the proxy's protocol detection sees bytes at once. TCP on PORT (7000); readiness on
 * HEALTH_PORT (8081) `/healthz`. Lines longer than 4 KiB close the connection (a bounded buffer per client).
 */
import { onTerm } from "./shutdown.ts";

const port = Number(Deno.env.get("PORT") ?? "7000");
const healthPort = Number(Deno.env.get("HEALTH_PORT") ?? "8081");
const pod = Deno.env.get("POD_NAME") ?? Deno.hostname();
const MAX_LINE = 4096;
const enc = new TextEncoder();
const prefix = enc.encode(`${pod} `);

async function serve(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(MAX_LINE);
  let have = 0;
  try {
    for (;;) {
      const n = await conn.read(buf.subarray(have));
      if (n === null) return;
      have += n;
      let start = 0;
      for (let nl = buf.indexOf(10, start); nl >= 0 && nl < have; nl = buf.indexOf(10, start)) {
        const line = buf.subarray(start, nl + 1);
        const out = new Uint8Array(prefix.length + line.length);
        out.set(prefix);
        out.set(line, prefix.length);
        for (let w = 0; w < out.length;) w += await conn.write(out.subarray(w));
        start = nl + 1;
      }
      buf.copyWithin(0, start, have);
      have -= start;
      if (have === MAX_LINE) return;
    }
  } catch {
    // A peer reset ends only this connection.
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}

const listener = Deno.listen({ hostname: "0.0.0.0", port });
console.log(`demo tcp echo ${pod} on :${port}`);
const stop = new AbortController();
const health = Deno.serve(
  { port: healthPort, hostname: "0.0.0.0", signal: stop.signal, onListen: () => {} },
  (req) =>
    new URL(req.url).pathname === "/healthz" ? new Response("ok\n") : new Response("", { status: 404 }),
);
onTerm(async () => {
  listener.close();
  stop.abort();
  await health.finished;
});
try {
  for await (const conn of listener) void serve(conn);
} catch {
  // The listener was closed by SIGTERM.
}

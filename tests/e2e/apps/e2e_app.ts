/**
 * The workload of the cluster tests: one self-contained file (no imports but Deno's node: built-ins) that a pod of the weft image runs with
 * `deno eval`, so the tests need nothing added to the image. Every pod is both a server and a client:
 *
 *   APP_PORT (8080)      GET /  → `hello from <pod>` (header x-pod-name); GET /healthz → ok
 *   CONTROL_PORT (8081)  GET /healthz → ok (readiness, kept off the app port so a policy on it never hides it)
 *                        GET /fetch?target=host:port&n=N&interval_ms=0  → N requests, each on a new connection,
 *                            interval_ms apart, as JSON
 *                        GET /session/start?target=host:port&interval_ms=200  → one keep-alive connection that
 *                            sends a request every interval until stopped
 *                        GET /session/stats  → what the session saw; GET /session/stop
 *                        GET /certify-flood?target=host:port&seconds=S&concurrency=C  → Identity.Certify calls
 *                            with junk and foreign tokens over h2c for S seconds, outcomes by grpc-status, as JSON
 *   LOOPBACK_PORT        when set, GET / → `private` on 127.0.0.1 only (what a meshed pod must keep private)
 * `/fetch` takes `method` (default GET) and `path`, so a test can send e.g. POST /shutdown from this pod.
 * The client side speaks HTTP/1.1 over raw sockets so "new connection" and "same connection" are exact.
 * On SIGTERM the app keeps serving for DRAIN_MS (3000) and then exits, as a well-behaved app does while its
 * endpoint is being removed everywhere.
 */
import * as http2 from "node:http2";

const pod = Deno.env.get("POD_NAME") ?? Deno.hostname();
const appPort = Number(Deno.env.get("APP_PORT") ?? "8080");
const controlPort = Number(Deno.env.get("CONTROL_PORT") ?? "8081");
const enc = new TextEncoder();
const dec = new TextDecoder();
const drainMs = Number(Deno.env.get("DRAIN_MS") ?? "3000");
const MAX_N = 400;

interface Answer {
  ok: boolean;
  status?: number;
  pod?: string;
  error?: string;
  ms: number;
}

/** Reads one HTTP/1.1 response (Content-Length bodies only, which Deno.serve sends for string bodies). */
async function readResponse(
  conn: Deno.Conn,
  carry: Uint8Array,
): Promise<{ answer: Answer; rest: Uint8Array }> {
  let buf = carry;
  const chunk = new Uint8Array(16 * 1024);
  const more = async () => {
    const n = await conn.read(chunk);
    if (n === null) throw new Error(`connection closed by peer after ${buf.length} bytes of the response`);
    const next = new Uint8Array(buf.length + n);
    next.set(buf);
    next.set(chunk.subarray(0, n), buf.length);
    buf = next;
  };
  let headEnd = -1;
  while ((headEnd = findHeadEnd(buf)) < 0) {
    if (buf.length > 64 * 1024) throw new Error("response head larger than 64 KiB");
    await more();
  }
  const head = dec.decode(buf.subarray(0, headEnd));
  const [statusLine, ...lines] = head.split("\r\n");
  const status = Number(statusLine.split(" ")[1]);
  const headers = new Map(lines.map((l) => {
    const i = l.indexOf(":");
    return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()] as [string, string];
  }));
  const length = Number(headers.get("content-length") ?? "0");
  while (buf.length < headEnd + 4 + length) await more();
  return {
    answer: { ok: status === 200, status, pod: headers.get("x-pod-name"), ms: 0 },
    rest: buf.slice(headEnd + 4 + length),
  };
}

function findHeadEnd(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i;
  }
  return -1;
}

function splitTarget(target: string): { hostname: string; port: number } {
  const i = target.lastIndexOf(":");
  if (i < 0) throw new Error(`target "${target}" must be host:port`);
  return { hostname: target.slice(0, i), port: Number(target.slice(i + 1)) };
}

function request(host: string, path: string, keepAlive: boolean, method = "GET"): Uint8Array {
  const body = method === "GET" ? "" : "content-length: 0\r\n";
  return enc.encode(
    `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n${body}connection: ${
      keepAlive ? "keep-alive" : "close"
    }\r\n\r\n`,
  );
}

async function withTimeout<T>(ms: number, conn: Deno.Conn | undefined, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      try {
        conn?.close();
      } catch { /* closed */ }
      reject(new Error(`timed out after ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** One request on a new connection. */
async function fetchOnce(target: string, path: string, timeoutMs: number, method = "GET"): Promise<Answer> {
  const t0 = performance.now();
  let conn: Deno.Conn | undefined;
  try {
    conn = await withTimeout(timeoutMs, undefined, Deno.connect(splitTarget(target)));
    const c = conn;
    await c.write(request(target, path, false, method));
    const { answer } = await withTimeout(timeoutMs, c, readResponse(c, new Uint8Array()));
    return { ...answer, ms: performance.now() - t0 };
  } catch (e) {
    return { ok: false, error: (e as Error).message, ms: performance.now() - t0 };
  } finally {
    try {
      conn?.close();
    } catch { /* closed */ }
  }
}

interface Session {
  target: string;
  ok: number;
  failed: number;
  /** Times the connection broke and had to be opened again. */
  reconnects: number;
  errors: string[];
  pods: Record<string, number>;
  stopped: boolean;
}
let session: Session | undefined;

async function runSession(s: Session, path: string, intervalMs: number): Promise<void> {
  let conn: Deno.Conn | undefined;
  let carry: Uint8Array = new Uint8Array();
  while (!s.stopped) {
    try {
      if (!conn) {
        conn = await withTimeout(2000, undefined, Deno.connect(splitTarget(s.target)));
        carry = new Uint8Array();
      }
      const c = conn;
      await c.write(request(s.target, path, true));
      const { answer, rest } = await withTimeout(2000, c, readResponse(c, carry));
      carry = rest;
      if (answer.ok) s.ok++;
      else s.failed++;
      if (answer.pod) s.pods[answer.pod] = (s.pods[answer.pod] ?? 0) + 1;
    } catch (e) {
      s.failed++;
      if (s.errors.length < 20) s.errors.push((e as Error).message);
      try {
        conn?.close();
      } catch { /* closed */ }
      if (conn) s.reconnects++;
      conn = undefined;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  try {
    conn?.close();
  } catch { /* closed */ }
}

/** Bytes of one protobuf length-delimited field (field numbers < 16, lengths < 2^21). */
function pbField(field: number, value: Uint8Array): Uint8Array {
  const len: number[] = [];
  let n = value.length;
  while (n > 0x7f) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  const out = new Uint8Array(1 + len.length + value.length);
  out[0] = (field << 3) | 2;
  out.set(len, 1);
  out.set(value, 1 + len.length);
  return out;
}

const b64url = (s: string) => btoa(s).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");

/** A gRPC-framed CertifyRequest {identity=1, token=2, certificate_signing_request=3}. */
function certifyBody(identity: string, token: string): Uint8Array {
  const msg = [
    pbField(1, enc.encode(identity)),
    pbField(2, enc.encode(token)),
    pbField(3, enc.encode("junk csr")),
  ];
  const size = msg.reduce((a, m) => a + m.length, 0);
  const out = new Uint8Array(5 + size);
  new DataView(out.buffer).setUint32(1, size);
  let at = 5;
  for (const m of msg) {
    out.set(m, at);
    at += m.length;
  }
  return out;
}

/**
 * Hostile Certify traffic: junk tokens, well-formed tokens for another audience, and well-formed tokens for the
 * right audience with a forged signature (only a TokenReview can refuse those). One h2c connection per worker.
 */
async function certifyFlood(target: string, seconds: number, concurrency: number): Promise<unknown> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = (aud: string) =>
    [
      b64url(JSON.stringify({ alg: "RS256", kid: "forged" })),
      b64url(
        JSON.stringify({ aud: [aud], exp: now + 3600, iat: now, sub: "system:serviceaccount:flood:flood" }),
      ),
      b64url("not a signature"),
    ].join(".");
  const id = "flood.flood.serviceaccount.identity.weft.cluster.local";
  const bodies = [
    certifyBody(id, "junk"),
    certifyBody(id, jwt("https://kubernetes.default.svc")),
    certifyBody(id, jwt("identity.l5d.io")),
  ];
  const statuses: Record<string, number> = {};
  const deadline = Date.now() + Math.min(seconds, 60) * 1000;
  let sent = 0;
  const MAX_CALLS = 50_000;
  const worker = async (w: number) => {
    let session: http2.ClientHttp2Session | undefined;
    for (let i = w; Date.now() < deadline && sent < MAX_CALLS; i++) {
      if (!session || session.destroyed || session.closed) {
        session = http2.connect(`http://${target}`);
        session.on("error", () => {});
      }
      const s = session;
      sent++;
      const outcome = await new Promise<string>((resolve) => {
        const req = s.request({
          ":method": "POST",
          ":path": "/io.linkerd.proxy.identity.Identity/Certify",
          "content-type": "application/grpc",
          te: "trailers",
        });
        let status = "no grpc-status";
        const timer = setTimeout(() => {
          req.close();
          resolve("timeout");
        }, 5000);
        req.on("response", (h) => {
          if (h["grpc-status"] !== undefined) status = `grpc-status ${h["grpc-status"]}`;
        });
        req.on("trailers", (t) => {
          if (t["grpc-status"] !== undefined) status = `grpc-status ${t["grpc-status"]}`;
        });
        req.on("data", () => {});
        req.on("close", () => {
          clearTimeout(timer);
          resolve(status);
        });
        req.on("error", (e) => {
          clearTimeout(timer);
          resolve(`error: ${e.message.slice(0, 80)}`);
        });
        req.end(bodies[i % bodies.length]);
      });
      statuses[outcome] = (statuses[outcome] ?? 0) + 1;
    }
    // Each call was awaited, so no stream is open: Deno's node:http2 aborts when a GOAWAY meets open streams.
    session?.close();
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, 64) }, (_, w) => worker(w)));
  return { from: pod, target, sent, statuses };
}

const loopbackPort = Deno.env.get("LOOPBACK_PORT");
if (loopbackPort) {
  Deno.serve(
    { port: Number(loopbackPort), hostname: "127.0.0.1", onListen: () => {} },
    () => new Response("private\n"),
  );
}

Deno.serve({ port: appPort, hostname: "0.0.0.0", onListen: () => {} }, (req) => {
  if (new URL(req.url).pathname === "/healthz") return new Response("ok\n");
  return new Response(`hello from ${pod}\n`, { headers: { "x-pod-name": pod } });
});

Deno.serve({ port: controlPort, hostname: "0.0.0.0", onListen: () => {} }, async (req) => {
  const url = new URL(req.url);
  const q = url.searchParams;
  switch (url.pathname) {
    case "/healthz":
      return new Response("ok\n");
    case "/fetch": {
      const target = q.get("target") ?? "";
      const n = Math.min(Number(q.get("n") ?? "1"), MAX_N);
      const timeoutMs = Number(q.get("timeout_ms") ?? "3000");
      const intervalMs = Math.min(Number(q.get("interval_ms") ?? "0"), 5000);
      const results: Answer[] = [];
      for (let i = 0; i < n; i++) {
        if (i > 0 && intervalMs > 0) await new Promise((r) => setTimeout(r, intervalMs));
        results.push(await fetchOnce(target, q.get("path") ?? "/", timeoutMs, q.get("method") ?? "GET"));
      }
      return Response.json({ from: pod, target, results });
    }
    case "/session/start": {
      if (session) session.stopped = true;
      const s: Session = {
        target: q.get("target") ?? "",
        ok: 0,
        failed: 0,
        reconnects: 0,
        errors: [],
        pods: {},
        stopped: false,
      };
      session = s;
      void runSession(s, q.get("path") ?? "/", Math.max(50, Number(q.get("interval_ms") ?? "200")));
      return Response.json({ started: s.target });
    }
    case "/certify-flood":
      return Response.json(
        await certifyFlood(
          q.get("target") ?? "",
          Number(q.get("seconds") ?? "10"),
          Number(q.get("concurrency") ?? "8"),
        ),
      );
    case "/session/stats":
      return Response.json(session ?? { error: "no session" }, { status: session ? 200 : 404 });
    case "/session/stop":
      if (session) session.stopped = true;
      return Response.json(session ?? { error: "no session" });
    default:
      return new Response("not found\n", { status: 404 });
  }
});
Deno.addSignalListener("SIGTERM", () => {
  console.log(`SIGTERM: serving ${drainMs} ms more, then exiting`);
  setTimeout(() => Deno.exit(0), drainMs);
});
console.log(`e2e app ${pod}: app :${appPort}, control :${controlPort}`);

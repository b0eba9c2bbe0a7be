/**
 * Programs for the slow-reader tests, run inside network-namespace pods. Each prints JSON lines.
 *
 *   serve <tcpPort> <httpPort>...
 *                                TCP: after the client's first bytes, streams 1 GiB (for at most
 *                                60 s). HTTP/1: GET /big streams 1 GiB with a Content-Length,
 *                                GET /small answers "ok", POST /sink never reads its body and
 *                                answers only when the client goes away.
 *   stall <kind> <host> <port> <seconds>
 *                                kind tcp or http: asks for the 1 GiB stream, reads 256 KiB of it,
 *                                prints {"stalled":true} and never reads again. kind upload: POSTs
 *                                a 1 GiB body to /sink, printing how much the network took every
 *                                second ({"uploaded":n}). Exits after `seconds`.
 */
const GIB = 1 << 30;
const CHUNK = new Uint8Array(64 * 1024).fill(0x61);
const print = (v: unknown) => console.log(JSON.stringify(v));

async function serveTcp(port: number): Promise<void> {
  const l = Deno.listen({ hostname: "0.0.0.0", port });
  for await (const conn of l) {
    (async () => {
      try {
        // Wait for the client to speak first (so outbound detection sees bytes).
        await conn.read(new Uint8Array(1024));
        const stop = Date.now() + 60_000;
        for (let sent = 0; sent < GIB && Date.now() < stop;) sent += await conn.write(CHUNK);
      } catch { /* the client went away */ }
      try {
        conn.close();
      } catch { /* already closed */ }
    })();
  }
}

function serveHttp(port: number): void {
  Deno.serve({ hostname: "0.0.0.0", port, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/small") return new Response("ok");
    if (path === "/big") {
      let sent = 0;
      // Pull-based: a chunk is made only when the server can take one.
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent >= GIB) return c.close();
          sent += CHUNK.length;
          c.enqueue(CHUNK);
        },
      });
      return new Response(body, { headers: { "content-length": String(GIB) } });
    }
    if (path === "/sink") {
      // Never reads the body: holds the request until the client gives up.
      await new Promise((r) => req.signal.addEventListener("abort", r));
      return new Response("never", { status: 413 });
    }
    return new Response("not found", { status: 404 });
  });
}

async function stall(kind: string, host: string, port: number, seconds: number): Promise<void> {
  const conn = await Deno.connect({ hostname: host, port });
  const end = Date.now() + seconds * 1000;
  const enc = new TextEncoder();
  if (kind === "upload") {
    await conn.write(enc.encode(
      `POST /sink HTTP/1.1\r\nhost: ${host}:${port}\r\ncontent-length: ${GIB}\r\n\r\n`,
    ));
    let uploaded = 0;
    const writing = (async () => {
      try {
        while (uploaded < GIB) uploaded += await conn.write(CHUNK);
      } catch { /* closed at exit */ }
    })();
    while (Date.now() < end) {
      await new Promise((r) => setTimeout(r, 1000));
      print({ uploaded });
    }
    conn.close();
    await writing;
    return;
  }
  await conn.write(
    kind === "http"
      ? enc.encode(`GET /big HTTP/1.1\r\nhost: ${host}:${port}\r\n\r\n`)
      : new Uint8Array([0, 1, 2, 3]),
  );
  const buf = new Uint8Array(64 * 1024);
  let got = 0;
  while (got < 256 * 1024) {
    const n = await conn.read(buf);
    if (n === null) throw new Error(`stream ended after ${got} bytes`);
    got += n;
  }
  print({ stalled: true, read: got });
  // From here on nothing reads the socket: the kernel's receive buffer fills and the window closes.
  await new Promise((r) => setTimeout(r, Math.max(0, end - Date.now())));
  conn.close();
}

const [mode, ...args] = Deno.args;
switch (mode) {
  case "serve":
    for (const port of args.slice(1)) serveHttp(Number(port));
    print({ listening: true });
    await serveTcp(Number(args[0]));
    break;
  case "stall":
    await stall(args[0], args[1], Number(args[2]), Number(args[3]));
    break;
  default:
    console.error(`unknown mode ${mode}`);
    Deno.exit(2);
}

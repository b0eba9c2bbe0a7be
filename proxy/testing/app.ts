/**
 * Small programs the data-path tests run inside their network namespaces:
 *
 *   echo <[host:]port>...              server: greets with `peer=<client ip>\n`, then echoes
 *                                      (host defaults to 0.0.0.0; 127.0.0.1:port is loopback-only)
 *   http <[host:]port>...              HTTP/1 server: every request gets 200 `peer=<client ip>`
 *   http-id <[host:]port>...           the same, answering `peer=<ip> client-id=<l5d-client-id> host=<Host>`
 *   client <ip:port> <text> [ms]       connects, sends text, half-closes, prints {ok, data, error}
 *   stream <ip:port> <n> <gapMs>       sends n numbered lines with a gap, expects each echoed
 *   fetch <url> [method]               prints {status, body}
 *   tls <ip:port> <sni> <creds|none> <caFile> <alpn|none> <headerPort|0> [payload] [name] [fwdId]
 *                                      a hand-made mesh client (for refused-client tests);
 *                                      sends `payload` (JSON string, default "attack") after the header,
 *                                      whose gateway `name` and forwarded client identity are optional
 *   relay <port=unix-path>...          forwards 127.0.0.1:port to a unix socket (control plane)
 */
import * as http from "node:http";
import * as net from "node:net";
import * as tls from "node:tls";
import { encodeTransportHeader } from "../../proto/transport_header_frame.ts";

function print(o: unknown): void {
  console.log(JSON.stringify(o));
}

function hostPort(s: string): { host: string; port: number } {
  const i = s.lastIndexOf(":");
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
}

function collect(
  sock: net.Socket,
  timeoutMs: number,
): Promise<{ ok: boolean; data: string; error?: string }> {
  return new Promise((resolve) => {
    let data = "";
    let error: string | undefined;
    const t = setTimeout(() => {
      error = "timeout";
      sock.destroy();
    }, timeoutMs);
    sock.on("data", (d) => data += d);
    sock.on("error", (e) => error ??= e.message);
    sock.on("close", () => {
      clearTimeout(t);
      resolve({ ok: error === undefined && data.length > 0, data, error });
    });
  });
}

const [cmd, ...args] = Deno.args;
switch (cmd) {
  case "echo": {
    for (const a of args) {
      const { host, port } = a.includes(":") ? hostPort(a) : { host: "0.0.0.0", port: Number(a) };
      net.createServer((s) => {
        s.on("error", () => {});
        s.write(`peer=${s.remoteAddress}\n`);
        s.pipe(s);
      }).listen(port, host);
    }
    console.log("listening");
    break;
  }
  case "http":
  case "http-id": {
    for (const a of args) {
      const { host, port } = a.includes(":") ? hostPort(a) : { host: "0.0.0.0", port: Number(a) };
      http.createServer((req, res) => {
        req.resume();
        const id = cmd === "http-id"
          ? ` client-id=${req.headers["l5d-client-id"] ?? ""} host=${req.headers.host ?? ""}`
          : "";
        res.end(`peer=${req.socket.remoteAddress}${id}`);
      }).listen(port, host);
    }
    console.log("listening");
    break;
  }
  case "client": {
    const { host, port } = hostPort(args[0]);
    const s = net.connect({ host, port });
    s.on("connect", () => s.end(args[1]));
    print(await collect(s, Number(args[2] ?? "5000")));
    break;
  }
  case "stream": {
    const { host, port } = hostPort(args[0]);
    const n = Number(args[1]), gap = Number(args[2]);
    const s = net.connect({ host, port });
    const done = collect(s, n * gap + 5000);
    await new Promise((r) => s.once("connect", r));
    for (let i = 0; i < n; i++) {
      s.write(`line${i}\n`);
      await new Promise((r) => setTimeout(r, gap));
    }
    s.end();
    const r = await done;
    const want = Array.from({ length: n }, (_, i) => `line${i}`);
    print({ ...r, ok: r.ok && want.every((l) => r.data.includes(`${l}\n`)) });
    break;
  }
  case "fetch": {
    try {
      const res = await fetch(args[0], { method: args[1] ?? "GET" });
      print({ status: res.status, body: await res.text() });
    } catch (e) {
      print({ status: 0, body: (e as Error).message });
    }
    break;
  }
  case "tls": {
    const { host, port } = hostPort(args[0]);
    const creds = args[2] === "none" ? undefined : JSON.parse(Deno.readTextFileSync(args[2]));
    const s = tls.connect({
      host,
      port,
      servername: args[1],
      key: creds?.keyPem,
      cert: creds?.certChainPem,
      ca: Deno.readTextFileSync(args[3]),
      ALPNProtocols: args[4] === "none" ? undefined : [args[4]],
      minVersion: "TLSv1.3",
      checkServerIdentity: () => undefined,
    });
    s.on("secureConnect", () => {
      const hp = Number(args[5]);
      if (hp > 0) {
        s.write(encodeTransportHeader({
          port: hp,
          name: args[7] ?? "",
          sessionProtocol: undefined,
          forwardedClientId: args[8] ?? "",
        }));
      }
      s.end(args[6] === undefined ? "attack" : JSON.parse(args[6]));
    });
    print(await collect(s, 5000));
    break;
  }
  case "relay": {
    for (const spec of args) {
      const [port, path] = spec.split("=");
      net.createServer((c) => {
        const u = net.connect({ path });
        c.on("error", () => u.destroy());
        u.on("error", () => c.destroy());
        c.pipe(u).pipe(c);
      }).listen(Number(port), "127.0.0.1");
    }
    console.log("listening");
    break;
  }
  default:
    console.error(`unknown command ${cmd}`);
    Deno.exit(2);
}

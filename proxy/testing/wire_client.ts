/**
 * A raw TCP client for hostile data-path tests, run inside a pod:
 *
 *   wire_client.ts <json>   {host, port, requests: [{name, pieces: [{afterMs, data}], readMs}]}
 *
 * Each request gets its own connection (all at once): every piece is written (latin1) after its
 * delay, then the client reads until the peer closes (or ends its side), one whole HTTP response has arrived
 * (head and Content-Length body), or `readMs` pass. Prints one JSON array of
 * {name, status (0 when the answer is not HTTP), data (the first 600 characters), closed, error}.
 */
import * as net from "node:net";

interface Piece {
  afterMs: number;
  data: string;
}
interface WireRequest {
  name: string;
  pieces: Piece[];
  readMs: number;
}
interface Outcome {
  name: string;
  status: number;
  data: string;
  closed: boolean;
  error?: string;
}

/** Whether `text` holds one complete HTTP response (head, and its Content-Length body). */
function wholeResponse(text: string): boolean {
  const end = text.indexOf("\r\n\r\n");
  if (end < 0 || !/^HTTP\/1\.\d \d{3}/.test(text)) return false;
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, end));
  return m === null || text.length - end - 4 >= Number(m[1]);
}

function run(host: string, port: number, r: WireRequest): Promise<Outcome> {
  return new Promise((resolve) => {
    let data = "";
    let error: string | undefined;
    let closed = false;
    let done = false;
    const timers: ReturnType<typeof setTimeout>[] = [];
    const s = net.connect({ host, port, allowHalfOpen: true });
    s.setEncoding("latin1");
    const finish = () => {
      if (done) return;
      done = true;
      for (const t of timers) clearTimeout(t);
      s.destroy();
      const m = /^HTTP\/1\.\d (\d{3})/.exec(data);
      resolve({ name: r.name, status: m ? Number(m[1]) : 0, data: data.slice(0, 600), closed, error });
    };
    s.on("data", (d: string) => {
      data += d;
      if (wholeResponse(data)) finish();
    });
    s.on("error", (e) => error ??= e.message);
    // The peer ending its side counts as closed (this side stays open, so `close` would wait).
    for (const ev of ["end", "close"]) {
      s.on(ev, () => {
        closed = true;
        finish();
      });
    }
    s.once("connect", () => {
      let at = 0;
      for (const p of r.pieces) {
        at += p.afterMs;
        timers.push(setTimeout(() => s.write(p.data, "latin1"), at));
      }
      timers.push(setTimeout(finish, at + r.readMs));
    });
  });
}

const spec = JSON.parse(Deno.args[0]) as { host: string; port: number; requests: WireRequest[] };
console.log(JSON.stringify(await Promise.all(spec.requests.map((r) => run(spec.host, spec.port, r)))));

/**
 * Test app for the tap data-path test, run inside pod namespaces:
 *   serve <port>                 HTTP/1.1 server: `/…/<3-digit code>` answers that status, else 200;
 *                                the body is `s<code>`
 *   get <url>...                 GETs each URL in turn; prints {"statuses": [...]}
 *   tap <json options>           Tap.Observe through grpc-js; prints {code, details, events}
 * The tap options: {addr, serverId, caFile, credsFile?, plaintext?, timeoutMs, request} where
 * `request` is an encoded ObserveRequest in base64 (the generated code has no JSON form).
 */
import * as http from "node:http";
import { ObserveRequest } from "../../proto/tap_messages.ts";
import { observe, summarize } from "./tap_client.ts";

const [cmd, ...args] = Deno.args;
switch (cmd) {
  case "serve": {
    http.createServer((req, res) => {
      req.resume();
      const m = /\/(\d{3})(?:\?|$)/.exec(req.url ?? "");
      const code = m ? Number(m[1]) : 200;
      res.writeHead(code, { "content-type": "text/plain" });
      res.end(`s${code}`);
    }).listen(Number(args[0]), "0.0.0.0");
    console.log("listening");
    break;
  }
  case "get": {
    const statuses: number[] = [];
    for (const url of args) {
      try {
        const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
        await r.arrayBuffer();
        statuses.push(r.status);
      } catch {
        statuses.push(0);
      }
    }
    console.log(JSON.stringify({ statuses }));
    break;
  }
  case "tap": {
    const o = JSON.parse(args[0]);
    const creds = o.credsFile ? JSON.parse(await Deno.readTextFile(o.credsFile)) : undefined;
    const r = await observe({
      addr: o.addr,
      serverId: o.serverId,
      caPem: await Deno.readTextFile(o.caFile),
      client: creds,
      plaintext: o.plaintext,
      timeoutMs: o.timeoutMs,
    }, ObserveRequest.decode(Uint8Array.from(atob(o.request), (c) => c.charCodeAt(0))));
    console.log(JSON.stringify({ code: r.code, details: r.details, events: r.events.map(summarize) }));
    // grpc-js may keep timers after close.
    Deno.exit(0);
    break;
  }
  default:
    console.error(`unknown command ${cmd}`);
    Deno.exit(2);
}

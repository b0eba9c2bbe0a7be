/**
 * Child process for goaway_guard_test.ts (a crash must not take the test runner with it):
 * an HTTP/2 server on 127.0.0.1 that prints its port, either serveHttp2 ("guarded") or a bare
 * node:http2 server ("bare"). Runs until killed, at most 60 s.
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import { serveHttp2 } from "./server.ts";
import { textResponse } from "../message.ts";

const mode = Deno.args[0];
let port: number;
if (mode === "bare") {
  const server = http2.createServer();
  server.on("stream", (st: http2.ServerHttp2Stream) => {
    st.on("error", () => {});
    st.resume();
    st.on("end", () => {
      st.respond({ ":status": 200 });
      st.end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as net.AddressInfo).port;
} else {
  const server = net.createServer((sock) => {
    sock.on("error", () => {});
    serveHttp2(sock, () => Promise.resolve(textResponse(200, "ok")));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as net.AddressInfo).port;
}
console.log(JSON.stringify({ port }));
setTimeout(() => Deno.exit(0), 60_000);

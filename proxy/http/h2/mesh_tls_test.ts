/**
 * HTTP/2 over the proxy's own mesh TLS (proxy/transport/tls.ts): serveHttp2 on a socket from
 * MeshTls.accept, Http2Connection over MeshTls.connect, as two meshed proxies talk.
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { CertStore } from "../../core/cert_store.ts";
import { createTestCa } from "../../testing/certs.ts";
import { MeshTls } from "../../transport/tls.ts";
import { peek } from "../../transport/peek.ts";
import { parseClientHello } from "../../transport/client_hello.ts";
import { bytesBody, HeaderList, type HttpService } from "../message.ts";
import { serveHttp2 } from "./server.ts";
import { Http2Connection } from "./client.ts";

const ca = await createTestCa("h2-mesh-test");
const CLIENT = "client.ns.serviceaccount.identity.linkerd.cluster.local";
const SERVER = "server.ns.serviceaccount.identity.linkerd.cluster.local";

async function meshFor(name: string): Promise<MeshTls> {
  const s = new CertStore();
  s.set(await ca.issue(name));
  return new MeshTls(s);
}

async function meshServer(service: HttpService) {
  const mesh = await meshFor(SERVER);
  const ids: (string | undefined)[] = [];
  const srv = net.createServer(async (sock) => {
    sock.on("error", () => {});
    // As the inbound proxy does: peek the ClientHello, then terminate TLS on the same socket.
    await peek(sock, (b) => parseClientHello(b).kind !== "incomplete", 8192, 2000);
    const t = await mesh.accept(sock, [], 2000);
    ids.push(t.clientId);
    serveHttp2(t.socket, service);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  return { port: (srv.address() as net.AddressInfo).port, ids, close: () => srv.close() };
}

Deno.test("h2 over mesh TLS: serveHttp2 on an accepted TLS socket, Http2Connection over MeshTls.connect", async () => {
  const server = await meshServer((req) =>
    Promise.resolve({
      status: 200,
      headers: new HeaderList(["content-type", "application/grpc"]),
      body: bytesBody([new TextEncoder().encode(req.path)], new HeaderList(["grpc-status", "0"])),
    })
  );
  const clientMesh = await meshFor(CLIENT);
  const conn = new Http2Connection({
    name: "mesh",
    connect: async () =>
      (await clientMesh.connect({
        host: "127.0.0.1",
        port: server.port,
        serverName: SERVER,
        expectedIdentity: SERVER,
        timeoutMs: 2000,
      })).socket,
  });
  try {
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      conn.request({
        method: "POST",
        scheme: "http",
        authority: "svc",
        path: `/svc/M${i}`,
        version: "HTTP/2",
        headers: new HeaderList(["content-type", "application/grpc"]),
        body: bytesBody([new Uint8Array(5)]),
      }, AbortSignal.timeout(5000))));
    for (let i = 0; i < rs.length; i++) {
      const chunks: Uint8Array[] = [];
      for (let c = await rs[i].body.read(); c !== null; c = await rs[i].body.read()) chunks.push(c);
      assert.equal(new TextDecoder().decode(chunks[0]), `/svc/M${i}`);
      assert.equal(rs[i].body.trailers?.get("grpc-status"), "0");
    }
    assert.deepEqual(server.ids, [CLIENT], "one mesh TLS connection, client identity verified");
  } finally {
    await conn.close(0);
    server.close();
  }
});

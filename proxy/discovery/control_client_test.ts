// Real TLS, real grpc-js on loopback.
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import * as net from "node:net";
import { type CertifyResponse, IdentityClient, IdentityService } from "../../proto/gen/identity.ts";
import { CertStore } from "../identity/cert_store.ts";
import { createTestCa } from "../testing/certs.ts";
import { controlChannelOptions, controlCredentials } from "./control_client.ts";

const enc = new TextEncoder();
const SERVER = "weft-destination.weft.serviceaccount.identity.weft.cluster.local";

Deno.test("control client: a channel made before certification waits, then presents the client certificate", async () => {
  const ca = await createTestCa("anchor");
  const serverCreds = await ca.issue(SERVER);
  const seen: string[] = [];
  const server = new grpc.Server();
  server.addService(IdentityService, {
    certify: (
      call: grpc.ServerUnaryCall<unknown, CertifyResponse>,
      cb: grpc.sendUnaryData<CertifyResponse>,
    ) => {
      const peer = call.getAuthContext?.()?.sslPeerCertificate;
      seen.push(peer?.subjectaltname ?? "none");
      cb(null, { leafCertificate: new Uint8Array([1]), intermediateCertificates: [] });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createSsl(
        Buffer.from(enc.encode(ca.certPem)),
        [{
          cert_chain: Buffer.from(enc.encode(serverCreds.certChainPem)),
          private_key: Buffer.from(enc.encode(serverCreds.keyPem)),
        }],
        true,
      ),
      (e, p) => e ? reject(e) : resolve(p),
    )
  );
  const store = new CertStore();
  const svc = { addr: { host: "127.0.0.1", port }, name: SERVER, plaintext: false };
  const client = new IdentityClient(
    `127.0.0.1:${port}`,
    controlCredentials(svc as never, store),
    controlChannelOptions(svc as never, { minMs: 50, maxMs: 200, jitter: 0 }),
  );
  try {
    const call = new Promise<void>((resolve, reject) =>
      client.certify(
        { identity: "web", token: new Uint8Array(), certificateSigningRequest: new Uint8Array() },
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
        (e) => e ? reject(e) : resolve(),
      )
    );
    // Certified only after the call was started: the old code had dialled with no certificate.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(seen.length, 0);
    store.set(await ca.issue("web.demo.serviceaccount.identity.weft.cluster.local"));
    await call;
    assert.deepEqual(seen, ["DNS:web.demo.serviceaccount.identity.weft.cluster.local"]);
  } finally {
    client.close();
    server.forceShutdown();
  }
});

Deno.test("control channels turn off grpc-js's DNS TXT (service config) lookups", () => {
  // Deno's node:dns ignores per-resolver servers, so the query itself cannot be observed on
  // loopback here; the option is what grpc-js checks before every TXT lookup.
  for (const plaintext of [true, false]) {
    const svc = { addr: { host: "destination.weft.test", port: 8086 }, name: "d.test", plaintext };
    const opts = controlChannelOptions(svc as never, { minMs: 50, maxMs: 200, jitter: 0 });
    assert.equal(opts["grpc.service_config_disable_resolution"], 1);
  }
});

Deno.test("control channels re-resolve a control-plane name within a second of a failure", () => {
  // Headless Services: a replaced controller pod's address disappears with it.
  const svc = { addr: { host: "policy.weft.test", port: 8090 }, name: "p.test", plaintext: false };
  const opts = controlChannelOptions(svc as never, { minMs: 50, maxMs: 200, jitter: 0 });
  assert.ok(Number(opts["grpc.dns_min_time_between_resolutions_ms"]) <= 1000);
});

Deno.test("control channels spread calls over every controller address and keep going when one is gone", async () => {
  const calls = [0, 0];
  const servers: grpc.Server[] = [];
  const ports: number[] = [];
  for (const i of [0, 1]) {
    const server = new grpc.Server();
    server.addService(IdentityService, {
      certify: (_c: unknown, cb: (e: null, r: CertifyResponse) => void) => {
        calls[i]++;
        cb(null, { leafCertificate: new Uint8Array(), intermediateCertificates: [], validUntil: undefined });
      },
    });
    ports.push(
      await new Promise<number>((resolve, reject) =>
        server.bindAsync(
          "127.0.0.1:0",
          grpc.ServerCredentials.createInsecure(),
          (e, p) => e ? reject(e) : resolve(p),
        )
      ),
    );
    servers.push(server);
  }
  // Controller 0 is reached through a TCP relay that the test cuts, as a replaced pod vanishes:
  // the connection just ends. (A grpc-js server's own shutdown sends GOAWAY, which Deno's
  // node:http2 client can hang on; in a mesh the controller's proxy closes without one.)
  const relayed = new Set<net.Socket>();
  const relay = net.createServer((a) => {
    const b = net.connect({ host: "127.0.0.1", port: ports[0] });
    for (const s of [a, b]) {
      relayed.add(s);
      s.on("error", () => {});
    }
    a.pipe(b).pipe(a);
  });
  await new Promise<void>((r) => relay.listen(0, "127.0.0.1", () => r()));
  const relayPort = (relay.address() as net.AddressInfo).port;
  const svc = { addr: { host: "127.0.0.1", port: relayPort }, name: "", plaintext: true };
  // Two addresses for one name, as a headless Service with two replicas resolves.
  const client = new IdentityClient(
    `ipv4:127.0.0.1:${relayPort},127.0.0.1:${ports[1]}`,
    controlCredentials(svc as never, new CertStore()),
    controlChannelOptions(svc as never, { minMs: 50, maxMs: 200, jitter: 0 }),
  );
  const certify = () =>
    new Promise<void>((resolve, reject) =>
      client.certify(
        { identity: "x", token: new Uint8Array(), certificateSigningRequest: new Uint8Array() },
        new grpc.Metadata(),
        { deadline: Date.now() + 5000 },
        (e) => e ? reject(e) : resolve(),
      )
    );
  try {
    for (let i = 0; i < 10; i++) await certify();
    assert.ok(calls[0] >= 3 && calls[1] >= 3, `calls per controller: ${calls}`);
    relay.close();
    for (const s of relayed) s.destroy();
    // A call racing the cut may fail once (the proxy's watches retry); once the channel has seen
    // the connection end, the dead address is skipped.
    await new Promise((r) => setTimeout(r, 300));
    const before = calls[1];
    for (let i = 0; i < 6; i++) await certify();
    assert.equal(calls[1] - before, 6, "every call went to the controller that is still up");
  } finally {
    client.close();
    relay.close();
    for (const s of relayed) s.destroy();
    for (const s of servers) s.forceShutdown();
  }
});

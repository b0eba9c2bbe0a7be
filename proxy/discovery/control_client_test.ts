// Control-plane channels with real TLS against a real grpc-js server on loopback.
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { type CertifyResponse, IdentityService } from "../../proto/gen/identity.ts";
import { IdentityDefinition } from "../../proto/gen_messages/identity.ts";
import { CertStore } from "../core/cert_store.ts";
import { createTestCa } from "../testing/certs.ts";
import { methodOf } from "../grpc/client.ts";
import { dnsResolve } from "../grpc/resolve.ts";
import { GrpcError, Status } from "../grpc/status.ts";
import { controlChannel } from "./control_client.ts";

const enc = new TextEncoder();
const SERVER = "weft-destination.weft.serviceaccount.identity.weft.cluster.local";
const CERTIFY = methodOf(IdentityDefinition, "certify");
const BACKOFF = { minMs: 50, maxMs: 200, jitter: 0 };

/** A grpc-js server that requires a client certificate and records the client's SAN per call. */
async function mtlsServer(serverName: string) {
  const ca = await createTestCa("anchor");
  const serverCreds = await ca.issue(serverName);
  const seen: string[] = [];
  const server = new grpc.Server();
  server.addService(IdentityService, {
    certify: (
      call: grpc.ServerUnaryCall<unknown, CertifyResponse>,
      cb: grpc.sendUnaryData<CertifyResponse>,
    ) => {
      const peer = call.getAuthContext?.()?.sslPeerCertificate;
      seen.push(peer?.subjectaltname ?? "none");
      cb(null, { leafCertificate: new Uint8Array([1]), intermediateCertificates: [], validUntil: undefined });
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
  return { ca, port, seen, close: () => server.forceShutdown() };
}

const request = { identity: "web", token: new Uint8Array(), certificateSigningRequest: new Uint8Array() };

Deno.test("control client: a channel made before certification waits, then presents the client certificate", async () => {
  const s = await mtlsServer(SERVER);
  const store = new CertStore();
  const svc = { addr: { host: "127.0.0.1", port: s.port }, name: SERVER, plaintext: false };
  const { channel, client } = controlChannel(svc as never, store, BACKOFF);
  try {
    const call = client.unary(CERTIFY, request, { timeoutMs: 10_000 });
    // Certified only after the call was started: dialling without a certificate would fail.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(s.seen.length, 0);
    store.set(await s.ca.issue("web.demo.serviceaccount.identity.weft.cluster.local"));
    const res = await call;
    assert.deepEqual(res.leafCertificate, new Uint8Array([1]));
    assert.deepEqual(s.seen, ["DNS:web.demo.serviceaccount.identity.weft.cluster.local"]);
  } finally {
    await channel.close();
    s.close();
  }
});

Deno.test("control client: a server without the expected identity is refused, naming both", async () => {
  const s = await mtlsServer("impostor.weft.serviceaccount.identity.weft.cluster.local");
  const store = new CertStore();
  store.set(await s.ca.issue("web.demo.serviceaccount.identity.weft.cluster.local"));
  const svc = { addr: { host: "127.0.0.1", port: s.port }, name: SERVER, plaintext: false };
  const { channel, client } = controlChannel(svc as never, store, BACKOFF);
  try {
    await assert.rejects(
      client.unary(CERTIFY, request, { timeoutMs: 5000 }),
      (e) =>
        e instanceof GrpcError && e.code === Status.UNAVAILABLE && e.details.includes(`want ${SERVER}`) &&
        e.details.includes("impostor.weft"),
    );
    assert.deepEqual(s.seen, [], "no call reached the impostor");
  } finally {
    await channel.close();
    s.close();
  }
});

Deno.test("control client: the target's addresses come from the system resolver; an IP is used as is", async () => {
  assert.deepEqual(await dnsResolve("10.1.2.3", 8086)(AbortSignal.timeout(1000)), [{
    host: "10.1.2.3",
    port: 8086,
  }]);
  assert.deepEqual(await dnsResolve("[fd00::1]", 8090)(AbortSignal.timeout(1000)), [{
    host: "fd00::1",
    port: 8090,
  }]);
  // `localhost.` (loopback in the proxy's config) is 127.0.0.1 without a lookup.
  assert.deepEqual(await dnsResolve("localhost.", 8086)(AbortSignal.timeout(1000)), [{
    host: "127.0.0.1",
    port: 8086,
  }]);
  const local = await dnsResolve("localhost", 8080)(AbortSignal.timeout(5000));
  assert.ok(local.length >= 1 && local.every((e) => e.port === 8080), JSON.stringify(local));
  assert.ok(local.some((e) => e.host === "127.0.0.1" || e.host === "::1"), JSON.stringify(local));
  await assert.rejects(
    dnsResolve("no-such-name.invalid.", 1)(AbortSignal.timeout(5000)),
    /cannot resolve no-such-name\.invalid\./,
  );
});

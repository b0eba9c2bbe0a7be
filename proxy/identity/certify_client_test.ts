import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { type CertifyRequest, type CertifyResponse, IdentityService } from "../../proto/gen/identity.ts";
import { createTestCa } from "../testing/certs.ts";
import { createCertifyClient, isLoopbackAddr } from "./certify_client.ts";
import { GrpcError, Status } from "../grpc/status.ts";

Deno.test("loopback identity addresses get plaintext, as linkerd2-proxy decides", () => {
  for (const a of ["127.0.0.1:8080", "127.3.2.1:8080", "[::1]:8080", "localhost.:8080"]) {
    assert.equal(isLoopbackAddr(a), true, a);
  }
  for (
    const a of [
      "localhost:8080",
      "10.0.0.1:8080",
      "linkerd-identity.linkerd.svc.cluster.local.:8080",
      "[::2]:1",
      "128.0.0.1:1",
    ]
  ) {
    assert.equal(isLoopbackAddr(a), false, a);
  }
  assert.throws(() => isLoopbackAddr("nohostport"), /is not host:port/);
});

// The client against a real grpc-js identity server on loopback.
const IDENTITY = "weft-identity.weft.serviceaccount.identity.weft.cluster.local";
const enc = new TextEncoder();

async function identityServer(tls: { certPem: string; keyPem: string; caPem: string } | undefined) {
  const seen: { identity: string; clientCert: boolean }[] = [];
  const server = new grpc.Server();
  server.addService(IdentityService, {
    certify: (
      call: grpc.ServerUnaryCall<CertifyRequest, CertifyResponse>,
      cb: grpc.sendUnaryData<CertifyResponse>,
    ) => {
      seen.push({
        identity: call.request.identity,
        clientCert: !!call.getAuthContext?.()?.sslPeerCertificate,
      });
      if (call.request.identity === "denied") {
        cb({ code: grpc.status.PERMISSION_DENIED, details: "token is not for denied" });
        return;
      }
      cb(null, {
        leafCertificate: new Uint8Array([7, 7]),
        intermediateCertificates: [],
        validUntil: undefined,
      });
    },
  });
  const creds = tls
    // With root certificates grpc-js asks for a client certificate without requiring one: with
    // none, Deno 2.9.6's grpc-js TLS server fails every handshake (wrong version number).
    ? grpc.ServerCredentials.createSsl(Buffer.from(enc.encode(tls.caPem)), [{
      cert_chain: Buffer.from(enc.encode(tls.certPem)),
      private_key: Buffer.from(enc.encode(tls.keyPem)),
    }], false)
    : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", creds, (e, p) => e ? reject(e) : resolve(p))
  );
  return { port, seen, close: () => server.forceShutdown() };
}

const req = (identity: string) => ({
  identity,
  token: enc.encode("jwt"),
  certificateSigningRequest: new Uint8Array(),
});

Deno.test("certify client: TLS to a non-loopback address verifies the server's name, presents no certificate", async () => {
  const ca = await createTestCa("anchor");
  const creds = await ca.issue(IDENTITY);
  const s = await identityServer({ certPem: creds.certChainPem, keyPem: creds.keyPem, caPem: ca.certPem });
  // "localhost" (without the dot) is not loopback by the proxy's rule, so this goes through TLS.
  const good = createCertifyClient({
    svcAddr: `localhost:${s.port}`,
    svcName: IDENTITY,
    trustAnchorsPem: ca.certPem,
  });
  const wrong = createCertifyClient({
    svcAddr: `localhost:${s.port}`,
    svcName: "other.weft.serviceaccount.identity.weft.cluster.local",
    trustAnchorsPem: ca.certPem,
  });
  try {
    const res = await good.certify(req("web"), 5000);
    assert.deepEqual([...res.leafCertificate], [7, 7]);
    assert.deepEqual(s.seen, [{ identity: "web", clientCert: false }]);
    await assert.rejects(
      wrong.certify(req("web"), 5000),
      (e) =>
        e instanceof GrpcError && e.code === Status.UNAVAILABLE &&
        e.details.includes("want other.weft.serviceaccount.identity.weft.cluster.local"),
    );
    assert.equal(s.seen.length, 1, "nothing was sent to a server with the wrong name");
  } finally {
    good.close();
    wrong.close();
    s.close();
  }
});

Deno.test("certify client: plaintext to loopback; the server's refusal keeps its code and details", async () => {
  const s = await identityServer(undefined);
  const c = createCertifyClient({ svcAddr: `127.0.0.1:${s.port}`, trustAnchorsPem: "" });
  try {
    assert.deepEqual([...(await c.certify(req("web"), 5000)).leafCertificate], [7, 7]);
    await assert.rejects(
      c.certify(req("denied"), 5000),
      (e) =>
        e instanceof GrpcError && e.code === Status.PERMISSION_DENIED &&
        e.details === "token is not for denied",
    );
  } finally {
    c.close();
    s.close();
  }
});

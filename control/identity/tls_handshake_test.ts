import assert from "node:assert/strict";
import * as tls from "node:tls";
import type { AddressInfo } from "node:net";
import { systemClock } from "../../proto/support/clock.ts";
import { toPem } from "./pem.ts";
import { CertifyService } from "./service.ts";
import { csrFor, identityOf, makeCa, TEST_CERTIFY_CONFIG, type TestCa } from "./test_pki.ts";

interface Workload {
  name: string;
  keyPem: string;
  chainPem: string;
  leafPem: string;
  intermediatesPem: string;
}

async function issue(ca: TestCa, sa: string, ns: string): Promise<Workload> {
  const name = identityOf(sa, ns);
  const service = new CertifyService({
    config: TEST_CERTIFY_CONFIG,
    issuer: () => ca.issuer,
    screenToken: () => undefined,
    validateToken: () => Promise.resolve({ namespace: ns, serviceAccount: sa }),
    clock: systemClock,
  });
  const { der, keys } = await csrFor(name);
  const res = await service.certify({
    identity: name,
    token: new TextEncoder().encode("t"),
    certificateSigningRequest: der,
  });
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const leafPem = toPem(res.leafCertificate);
  const intermediatesPem = res.intermediateCertificates.map((d) => toPem(d)).join("");
  return {
    name,
    keyPem: toPem(pkcs8, "PRIVATE KEY"),
    leafPem,
    intermediatesPem,
    chainPem: leafPem + intermediatesPem,
  };
}

/** One mutual-TLS handshake: returns each side's view of the other's SAN. */
async function handshake(server: Workload, client: Workload, anchorPem: string) {
  const srv = tls.createServer({
    key: server.keyPem,
    cert: server.chainPem,
    ca: anchorPem,
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: "TLSv1.3",
  });
  const serverSaw = new Promise<string>((resolve, reject) => {
    srv.on("secureConnection", (sock: tls.TLSSocket) => {
      resolve(sock.getPeerCertificate().subjectaltname ?? "");
      sock.end();
    });
    srv.on("tlsClientError", reject);
  });
  serverSaw.catch(() => {}); // awaited below unless the client fails first
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const port = (srv.address() as AddressInfo).port;
  try {
    const clientSaw = await new Promise<{ san: string; authorized: boolean; protocol: string | null }>(
      (resolve, reject) => {
        const sock = tls.connect({
          host: "127.0.0.1",
          port,
          servername: server.name,
          key: client.keyPem,
          cert: client.chainPem,
          ca: anchorPem,
          minVersion: "TLSv1.3",
        }, () => {
          const out = {
            san: sock.getPeerCertificate().subjectaltname ?? "",
            authorized: sock.authorized,
            protocol: sock.getProtocol(),
          };
          sock.on("close", () => resolve(out));
          sock.on("data", () => {});
        });
        sock.on("error", reject);
      },
    );
    return { clientSaw, serverSaw: await serverSaw };
  } finally {
    await new Promise<void>((r) => srv.close(() => r()));
  }
}

Deno.test("two issued certificates complete mTLS handshakes through node:tls in both directions", async () => {
  const ca = await makeCa();
  const a = await issue(ca, "sa-a", "ns-a");
  const b = await issue(ca, "sa-b", "ns-b");
  for (const [server, client] of [[a, b], [b, a]]) {
    const { clientSaw, serverSaw } = await handshake(server, client, ca.anchorPem);
    assert.equal(clientSaw.authorized, true);
    assert.equal(clientSaw.protocol, "TLSv1.3");
    assert.equal(clientSaw.san, `DNS:${server.name}`);
    assert.equal(serverSaw, `DNS:${client.name}`);
  }
});

Deno.test("a client trusting another anchor refuses the issued certificate", async () => {
  const ca = await makeCa();
  const other = await makeCa();
  const a = await issue(ca, "sa-a", "ns-a");
  const b = await issue(ca, "sa-b", "ns-b");
  await assert.rejects(handshake(a, b, other.anchorPem));
});

async function openssl(args: string[]): Promise<{ code: number; out: string }> {
  const p = await new Deno.Command("openssl", { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: p.code, out: dec.decode(p.stdout) + dec.decode(p.stderr) };
}

Deno.test("openssl verify accepts the issued chain against the anchors for server and client use", async () => {
  const ca = await makeCa();
  const other = await makeCa();
  const a = await issue(ca, "sa-a", "ns-a");
  const dir = await Deno.makeTempDir({ prefix: "weft-identity-openssl-" });
  try {
    await Deno.writeTextFile(`${dir}/anchors.pem`, ca.anchorPem);
    await Deno.writeTextFile(`${dir}/other.pem`, other.anchorPem);
    await Deno.writeTextFile(`${dir}/chain.pem`, a.intermediatesPem);
    await Deno.writeTextFile(`${dir}/leaf.pem`, a.leafPem);
    for (const purpose of ["sslserver", "sslclient"]) {
      const r = await openssl([
        "verify",
        "-purpose",
        purpose,
        "-CAfile",
        `${dir}/anchors.pem`,
        "-untrusted",
        `${dir}/chain.pem`,
        `${dir}/leaf.pem`,
      ]);
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /leaf\.pem: OK/);
    }
    const wrong = await openssl([
      "verify",
      "-CAfile",
      `${dir}/other.pem`,
      "-untrusted",
      `${dir}/chain.pem`,
      `${dir}/leaf.pem`,
    ]);
    assert.notEqual(wrong.code, 0, wrong.out);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

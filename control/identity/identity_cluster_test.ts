/**
 * Against the real API server in KUBECONFIG: TokenRequest tokens for ServiceAccount A with the
 * identity audience get a certificate for A's identity and are refused for B's; a token for
 * another audience is refused. TokenReview is the real one.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { CoreV1Api } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { type CertifyResponse, IdentityClient } from "../../proto/gen/identity.ts";
import { loadKubeConfig } from "../k8s/mod.ts";
import { systemClock } from "../../proto/support/clock.ts";
import { serveIdentityGrpc } from "./grpc_server.ts";
import { CertifyService } from "./service.ts";
import { csrFor, identityOf, makeCa, TEST_CERTIFY_CONFIG, testTokenScreen } from "./test_pki.ts";
import { KubeTokenReviewer } from "./token_review.ts";
import { TokenValidator } from "./token_validator.ts";
import { x509 } from "../../proto/support/x509.ts";

const kubeconfig = Deno.env.get("KUBECONFIG");

Deno.test({
  name:
    "a TokenRequest token for ServiceAccount A gets A's certificate and is refused for B's (real TokenReview)",
  ignore: !kubeconfig,
  async fn() {
    const kc = loadKubeConfig(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const ns = `weft-identity-${crypto.randomUUID().slice(0, 8)}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const validator = new TokenValidator(new KubeTokenReviewer(kc), {
      audiences: ["identity.l5d.io"],
      rateLimit: { ratePerSecond: 20, burst: 20, maxQueued: 100 },
      timeoutMs: 10_000,
    }, systemClock);
    const ca = await makeCa();
    const service = new CertifyService({
      config: TEST_CERTIFY_CONFIG,
      issuer: () => ca.issuer,
      screenToken: testTokenScreen(),
      validateToken: (t, client) => validator.validate(t, client),
      clock: systemClock,
    });
    const server = await serveIdentityGrpc({ service, registry: new Registry(), address: "127.0.0.1:0" });
    const client = new IdentityClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    const certify = (identity: string, token: string, csr: Uint8Array) =>
      new Promise<{ err: grpc.ServiceError | null; res?: CertifyResponse }>((resolve) =>
        client.certify(
          { identity, token: new TextEncoder().encode(token), certificateSigningRequest: csr },
          (err, res) => resolve({ err, res }),
        )
      );
    try {
      for (const name of ["sa-a", "sa-b"]) {
        await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
      }
      const tokenFor = async (sa: string, audiences: string[]) =>
        (await core.createNamespacedServiceAccountToken({
          name: sa,
          namespace: ns,
          body: { spec: { audiences, expirationSeconds: 600 } },
        })).status!.token!;
      const tokenA = await tokenFor("sa-a", ["identity.l5d.io"]);
      const idA = identityOf("sa-a", ns);
      const idB = identityOf("sa-b", ns);

      const ok = await certify(idA, tokenA, (await csrFor(idA)).der);
      assert.equal(ok.err, null, ok.err?.details);
      const leaf = new x509.X509Certificate(Uint8Array.from(ok.res!.leafCertificate));
      assert.deepEqual(leaf.getExtension(x509.SubjectAlternativeNameExtension)?.names.toJSON(), [{
        type: "dns",
        value: idA,
      }]);

      const asB = await certify(idB, tokenA, (await csrFor(idB)).der);
      assert.equal(asB.err?.code, grpc.status.FAILED_PRECONDITION);
      assert.match(asB.err!.details, new RegExp(`token is for ServiceAccount ${ns}/sa-a`));

      const otherAudience = await tokenFor("sa-a", ["some-other-audience"]);
      const wrongAud = await certify(idA, otherAudience, (await csrFor(idA)).der);
      assert.equal(wrongAud.err?.code, grpc.status.FAILED_PRECONDITION);
      assert.match(
        wrongAud.err!.details,
        /token audience \["some-other-audience"\] does not include "identity\.l5d\.io"/,
      );
    } finally {
      client.close();
      await server.close(100);
      validator.close();
      await core.deleteNamespace({ name: ns }).catch(() => {});
    }
  },
});

// mesh:check's exit code follows the rotation group (issue 21): an anchor or the issuer under its threshold fails
// the run (exit 1); pods behind or unreadable are warnings only (exit 0). The rotation group reads a fake API
// server's objects (real certificates) through the same checkRotation that runChecks calls, and the exit code
// comes from checkOutcome, which manifests/main.ts returns for `check`.
import assert from "node:assert/strict";
import { createIssuer, createTrustAnchor } from "../../control/certs/pki.ts";
import { ISSUERS_KEY } from "../../control/identity/trust_roots.ts";
import type { Kube } from "../kube.ts";
import { ISSUER_SECRET, NAMESPACE, TRUST_ROOTS_CONFIGMAP, TRUST_ROOTS_KEY } from "../render.ts";
import { checkOutcome, type CheckResult, result } from "./result.ts";
import { checkRotation } from "./rotation.ts";

const DAY = 86_400_000;
const HOUR = 3_600_000;
/** mesh:check's defaults (manifests/main.ts): 720h for anchors, 168h for the issuer. */
const THRESHOLDS = { anchorMs: 720 * HOUR, issuerMs: 168 * HOUR };

/** An anchor and its issuer with the given days left, as the trust-roots ConfigMap and issuer Secret hold them. */
async function identity(now: number, anchorDays: number, issuerDays: number) {
  const anchor = await createTrustAnchor({
    commonName: "root.weft.cluster.local",
    lifetimeMs: anchorDays * DAY,
    now,
  });
  const issuer = await createIssuer(anchor, {
    commonName: "identity.weft.cluster.local",
    lifetimeMs: issuerDays * DAY,
    now,
  });
  return { anchorPem: anchor.certPem, issuerPem: issuer.certPem };
}

/** The three reads of the rotation group: the ConfigMap, the Secret, the meshed pods (one unreadable). */
function fakeKube(o: { anchorPem: string; issuerPem: string }): Kube {
  const objects: Record<string, unknown> = {
    [`/api/v1/namespaces/${NAMESPACE}/configmaps/${TRUST_ROOTS_CONFIGMAP}`]: {
      data: { [TRUST_ROOTS_KEY]: o.anchorPem, [ISSUERS_KEY]: o.issuerPem },
    },
    [`/api/v1/namespaces/${NAMESPACE}/secrets/${ISSUER_SECRET}`]: {
      data: { "crt.pem": btoa(o.issuerPem) },
    },
  };
  const pod = {
    metadata: { namespace: "app", name: "web-1", labels: {} },
    spec: { containers: [{ name: "app" }, { name: "linkerd-proxy" }] },
    status: { phase: "Running" },
  };
  const fake = {
    get: (path: string) => Promise.resolve(objects[path]),
    list: (path: string) => Promise.resolve(path === "/api/v1/pods" ? [pod] : []),
    podProxy: () => Promise.resolve({ status: 503, text: "proxy not ready" }),
  };
  return fake as unknown as Kube;
}

/** Every other group passing, so the rotation group alone decides the exit code. */
const OTHERS: CheckResult[] = [
  result("cluster", "API server", "ok", "reachable"),
  result("control plane", "weft-identity", "ok", "rolled out"),
  result("data plane", "proxies", "ok", "ready"),
];

async function run(anchorDays: number, issuerDays: number) {
  const now = Date.now();
  const kube = fakeKube(await identity(now, anchorDays, issuerDays));
  const rotation = await checkRotation({ kube, thresholdMs: 60 * DAY, now }, THRESHOLDS);
  const outcome = checkOutcome([...OTHERS, ...rotation]);
  const byName = (n: string) => rotation.find((r) => r.name === n)!;
  return { rotation, outcome, byName };
}

Deno.test("mesh:check exits 1 when a trust anchor expires within --anchor-threshold", async () => {
  const { outcome, byName } = await run(10, 9); // the issuer's 9 days are above its 168h
  assert.equal(byName("trust anchors").outcome, "fail");
  assert.match(byName("trust anchors").detail, /within --anchor-threshold=720h/);
  assert.equal(byName("issuer").outcome, "ok");
  assert.equal(outcome.code, 1);
  assert.match(outcome.line, /^mesh:check: 1 of \d+ checks failed$/);
});

Deno.test("mesh:check exits 1 when the issuer alone expires within --issuer-threshold", async () => {
  const { outcome, byName } = await run(3650, 3);
  assert.equal(byName("trust anchors").outcome, "ok");
  assert.equal(byName("issuer").outcome, "fail");
  assert.match(byName("issuer").detail, /within --issuer-threshold=168h/);
  assert.equal(outcome.code, 1);
  assert.match(outcome.line, /^mesh:check: 1 of \d+ checks failed$/);
});

Deno.test("mesh:check exits 0 above both thresholds, a pod it cannot read being only a warning", async () => {
  const { rotation, outcome, byName } = await run(3650, 365);
  assert.equal(byName("trust anchors").outcome, "ok");
  assert.equal(byName("issuer").outcome, "ok");
  assert.equal(byName("pod app/web-1").outcome, "warn");
  assert.ok(rotation.every((r) => r.outcome !== "fail"), JSON.stringify(rotation));
  assert.equal(outcome.code, 0);
  assert.match(outcome.line, /^mesh:check: all \d+ checks passed \(\d+ warnings\)$/);
});

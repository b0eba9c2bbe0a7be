import assert from "node:assert/strict";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { x509 } from "../../proto/support/x509.ts";
import { certInfo } from "./cert_info.ts";
import { makeCa, newIssuerMaterial } from "./test_pki.ts";
import { ISSUERS_KEY, RENEW_BEFORE_KEY, TRUST_ANCHORS_KEY } from "./trust_roots.ts";
import { type TrustRootsClient, TrustRootsPublisher } from "./trust_roots_publisher.ts";

/** A ConfigMap in memory with a resourceVersion precondition, and failures on demand. */
class FakeConfigMap implements TrustRootsClient {
  rv = 1;
  patches: Record<string, string>[] = [];
  failNext: string[] = [];
  constructor(public data: Record<string, string>) {}
  get() {
    return Promise.resolve({ data: { ...this.data }, resourceVersion: String(this.rv) });
  }
  patch(data: Record<string, string>, resourceVersion?: string) {
    const fail = this.failNext.shift();
    if (fail) return Promise.reject(new Error(fail));
    if (resourceVersion !== String(this.rv)) return Promise.reject(new Error("HTTP 409: conflict"));
    this.patches.push(data);
    this.data = { ...this.data, ...data };
    this.rv++;
    return Promise.resolve();
  }
}

async function until(what: string, cond: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function settle(p: TrustRootsPublisher) {
  await p.idle();
  await new Promise((r) => setTimeout(r, 0));
}

Deno.test("a failed write is retried with backoff and logged; the issuer is set without waiting for it", async () => {
  const clock = new FakeClock(Date.now());
  const ca = await makeCa(clock.now());
  const a = new x509.X509Certificate(ca.material.certPem);
  const cm = new FakeConfigMap({ [TRUST_ANCHORS_KEY]: ca.anchorPem });
  cm.failNext = ["HTTP 403: forbidden", "connection reset"];
  const logs: string[] = [];
  const p = new TrustRootsPublisher({
    client: cm,
    clock,
    clockSkewMs: 20_000,
    what: "configmap weft/linkerd-identity-trust-roots",
    log: (l) => logs.push(l),
    backoff: { initialMs: 1000, maxMs: 60_000 },
  });
  const t0 = performance.now();
  p.setIssuer([a], (await certInfo(a)).fingerprint); // returns at once: the write runs on its own
  assert.ok(performance.now() - t0 < 50);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(cm.patches.length, 0);
  assert.match(
    logs.join("\n"),
    /cannot update configmap weft\/linkerd-identity-trust-roots \(attempt 1, retrying in \d+ms; issuance is not affected\): HTTP 403: forbidden/,
  );
  clock.advance(500); // not yet
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(logs.length, 2);
  clock.advance(700); // first backoff, ~1 s
  await until("the second failure", () => logs.length >= 3);
  assert.match(logs.join("\n"), /attempt 2, retrying in \d+ms.*connection reset/);
  assert.equal(cm.patches.length, 0);
  clock.advance(2400); // second backoff, ~2 s
  await settle(p);
  assert.equal(cm.patches.length, 1);
  assert.equal(cm.data[ISSUERS_KEY], a.toString("pem").trim() + "\n");
  p.stop();
});

Deno.test("a conflicting writer (409) is re-read and the renew-before written once with the new issuer", async () => {
  const clock = new FakeClock(Date.now());
  const ca = await makeCa(clock.now());
  const a = new x509.X509Certificate(ca.material.certPem);
  const b = new x509.X509Certificate(
    (await newIssuerMaterial({ certPem: ca.anchorPem, keyPem: ca.anchorKeyPem }, clock.now(), "issuer-b"))
      .certPem,
  );
  const cm = new FakeConfigMap({ [TRUST_ANCHORS_KEY]: ca.anchorPem });
  const p = new TrustRootsPublisher({ client: cm, clock, clockSkewMs: 20_000, what: "cm" });
  p.setIssuer([a], (await certInfo(a)).fingerprint);
  await settle(p);
  assert.equal(cm.patches.length, 1);
  assert.equal(cm.data[RENEW_BEFORE_KEY], undefined);

  // Someone else writes between our read and our patch: the stale patch is refused, then redone.
  const realGet = cm.get.bind(cm);
  let raced = false;
  cm.get = async () => {
    const r = await realGet();
    if (!raced) {
      raced = true;
      cm.data = { ...cm.data, other: "x" };
      cm.rv++;
    }
    return r;
  };
  clock.advance(5000);
  p.setIssuer([b], (await certInfo(b)).fingerprint);
  await until("the refused patch", () => clock.pendingTimers > 1);
  clock.advance(1200);
  await settle(p);
  assert.equal(cm.patches.length, 2);
  assert.match(cm.data[RENEW_BEFORE_KEY], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.ok(new Date(cm.data[RENEW_BEFORE_KEY]).getTime() > clock.now() - 30_000);
  assert.equal(cm.data.other, "x");
  assert.ok(cm.data[ISSUERS_KEY].startsWith(b.toString("pem").trim()));

  // The same issuer verified again (e.g. after an anchor change) writes nothing new.
  p.setIssuer([b], (await certInfo(b)).fingerprint);
  await settle(p);
  assert.equal(cm.patches.length, 2);
  // A deploy that wiped the keys gets them back on the next change it causes.
  delete cm.data[ISSUERS_KEY];
  p.kick();
  await settle(p);
  assert.equal(cm.patches.length, 3);
  assert.ok(cm.data[ISSUERS_KEY].startsWith(b.toString("pem").trim()));
  p.stop();
});

Deno.test("a follower (canWrite false) writes nothing; kick() on gaining leadership publishes the current issuer", async () => {
  const clock = new FakeClock(Date.now());
  const ca = await makeCa(clock.now());
  const a = new x509.X509Certificate(ca.material.certPem);
  const cm = new FakeConfigMap({ [TRUST_ANCHORS_KEY]: ca.anchorPem });
  let leading = false;
  let reads = 0;
  const client: TrustRootsClient = {
    get: () => (reads++, cm.get()),
    patch: (d, rv) => cm.patch(d, rv),
  };
  const p = new TrustRootsPublisher({
    client,
    clock,
    clockSkewMs: 20_000,
    what: "configmap weft/linkerd-identity-trust-roots",
    canWrite: () => leading,
  });
  p.setIssuer([a], (await certInfo(a)).fingerprint);
  p.kick();
  await settle(p);
  clock.advance(120_000);
  await settle(p);
  assert.equal(reads, 0);
  assert.equal(cm.patches.length, 0);
  leading = true;
  p.kick();
  await settle(p);
  assert.equal(cm.patches.length, 1);
  assert.equal(cm.data[ISSUERS_KEY], a.toString("pem").trim() + "\n");
  p.stop();
});

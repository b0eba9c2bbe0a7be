/**
 * Early renewal and the live anchors in the proxy's identity client, against the real identity
 * server (its own process) on an injected clock.
 */
import assert from "node:assert/strict";
import { CertStore, type TlsCredentials } from "../core/cert_store.ts";
import { buildTrustBundle, TrustStore } from "../core/trust_store.ts";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { ProxyIdentity } from "./proxy_identity.ts";
import { startIdentityServer } from "../testing/identity_server.ts";
import { createTestAnchor } from "../testing/issuer_certs.ts";

const A = "sa-a.ns-a.serviceaccount.identity.linkerd.cluster.local";

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function setup(random: () => number) {
  const dir = await Deno.makeTempDir({ prefix: "weft-early-renewal-" });
  const srv = await startIdentityServer(dir, ["tok-a=ns-a/sa-a"], "1h");
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, "tok-a");
  const clock = new FakeClock(Date.now());
  const store = new CertStore();
  const changes: TlsCredentials[] = [];
  store.onChange((c) => changes.push(c));
  const trust = new TrustStore(buildTrustBundle(srv.anchorsPem).bundle);
  const logs: string[] = [];
  const identity = new ProxyIdentity({
    localName: A,
    trustAnchorsPem: srv.anchorsPem,
    tokenFile,
    svcAddr: `127.0.0.1:${srv.port}`,
    minRefreshMs: 10_000,
    maxRefreshMs: 86_400_000,
    backoff: { minMs: 100, maxMs: 60_000, jitter: 0.1 },
    certifyTimeoutMs: 5000,
  }, { store, trust, clock, random, log: (l) => logs.push(l) });
  const ctl = new AbortController();
  const running = identity.run(ctl.signal);
  return {
    srv,
    clock,
    store,
    changes,
    trust,
    identity,
    logs,
    close: async () => {
      ctl.abort();
      await running;
      await srv.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("early renewal: a leaf issued before weft-renew-before renews after the random delay, not at 70%", async () => {
  const t = await setup(() => 0.5);
  try {
    await t.store.ready;
    const usual = t.identity.nextRefreshAt! - t.clock.now();
    assert.ok(usual > 30 * 60_000, `usual renewal in ${usual}ms`);
    // A time before the leaf was issued asks nothing of it.
    assert.equal(t.identity.renewIfIssuedBefore(new Date(t.clock.now() - 3_600_000)), undefined);
    const at = new Date(t.clock.now() + 1000);
    const delay = t.identity.renewIfIssuedBefore(at);
    assert.equal(delay, 15_000);
    t.clock.advance(14_000);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(t.changes.length, 1, "not before the delay");
    t.clock.advance(1000);
    await until("the early renewal", () => t.changes.length === 2);
    assert.notEqual(t.changes[1].certChainPem, t.changes[0].certChainPem);
    // The new leaf was fetched after the time: asking again with the same time changes nothing.
    await until("the next schedule", () => t.identity.nextRefreshAt! - t.clock.now() > 30 * 60_000);
    assert.equal(t.identity.renewIfIssuedBefore(at), undefined);
    assert.ok(t.logs.some((l) => /renewing within 15s: the leaf was issued before/.test(l)));
  } finally {
    await t.close();
  }
});

Deno.test("early renewal: the new leaf must chain to the anchors trusted now", async () => {
  const t = await setup(() => 0);
  try {
    await t.store.ready;
    // The bundle moves to a foreign anchor only: identity's next leaf no longer verifies.
    const foreign = await createTestAnchor("early-renewal-foreign");
    t.trust.set(buildTrustBundle(foreign.certPem).bundle);
    assert.equal(t.identity.renewIfIssuedBefore(new Date(t.clock.now() + 1000)), 0);
    await until("the refusal", () => t.identity.lastError !== undefined);
    assert.match(t.identity.lastError!, /not signed by any trust anchor/);
    assert.equal(t.changes.length, 1, "the refused leaf is not used");
    // Old and new anchors trusted (rotation step 1): the next attempt is accepted.
    t.trust.set(buildTrustBundle(foreign.certPem + t.srv.anchorsPem).bundle);
    t.clock.advance(t.identity.nextRefreshAt! - t.clock.now());
    await until("the renewal", () => t.changes.length === 2);
    assert.equal(t.store.current()!.trustAnchorsPem, t.trust.current().anchorsPem);
  } finally {
    await t.close();
  }
});

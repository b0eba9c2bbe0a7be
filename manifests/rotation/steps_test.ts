// The rotation steps against a fake cluster (pure logic: the ConfigMap, the Secret and what each component
// reports are plain values here); the real thing is tests/e2e/rotation_cluster_test.ts.
import assert from "node:assert/strict";
import { createIssuer, createSelfSignedCa, createTrustAnchor } from "../../control/certs/pki.ts";
import type { Pair } from "../certs.ts";
import { anchorOf, parseCerts } from "./bundle.ts";
import type { View } from "./observe.ts";
import { rotateAnchor, rotateIssuer } from "./procedure.ts";
import {
  addAnchor,
  BUNDLE_KEY,
  ConflictError,
  installIssuer,
  type IssuerSecret,
  Refused,
  removeAnchor,
  RENEW_BEFORE_KEY,
  type RotationCluster,
  status,
  type StepContext,
  type TrustRoots,
  waitLeaves,
  waitTrust,
} from "./steps.ts";

const HOUR = 3_600_000;
const T0 = Date.now();

async function anchor(cn: string, lifetimeMs = 1000 * HOUR): Promise<Pair> {
  const a = await createTrustAnchor({ commonName: cn, lifetimeMs, now: T0, skewMs: 60_000 });
  return { certPem: a.certPem, keyPem: a.keyPem };
}
async function issuer(a: Pair): Promise<Pair> {
  const i = await createIssuer(a, {
    commonName: "identity.weft.cluster.local",
    lifetimeMs: 100 * HOUR,
    now: T0,
  });
  return { certPem: i.certPem, keyPem: i.keyPem };
}
async function fp(pem: string): Promise<string> {
  return (await parseCerts(pem, "test"))[0].fingerprint;
}

/**
 * A cluster whose components follow the ConfigMap and Secret the way the mesh does, `lag` views() calls late:
 * each proxy trusts the bundle it last saw; identity signs with the Secret's issuer; a proxy renews its leaf
 * (from identity's issuer) once weft-renew-before is past its leaf's time.
 */
class FakeCluster implements RotationCluster {
  readonly trustRootsName = "weft/linkerd-identity-trust-roots";
  readonly issuerSecretName = "weft/linkerd-identity-issuer";
  data: Record<string, string>;
  version = 1;
  secret: IssuerSecret;
  pods: { name: string; anchors: string[]; issuer: string; leafAt: number; seenAt: number }[] = [];
  identity = { anchors: [] as string[], issuer: "" };
  /** How many views() calls a change takes to reach the components. */
  lag = 1;
  calls = 0;
  conflicts = 0;
  writes: string[] = [];
  /** When set, views() returns these instead of simulating. */
  fixed?: View[];
  #pending: (() => Promise<void>)[][] = [];
  clock = { t: T0 };

  constructor(bundle: string, iss: Pair, format: IssuerSecret["format"] = "crt.pem") {
    this.data = { [BUNDLE_KEY]: bundle };
    this.secret = { pair: iss, format, version: "1" };
  }

  async init(podNames: string[]): Promise<this> {
    const anchors = (await parseCerts(this.data[BUNDLE_KEY], "b")).map((c) => c.fingerprint);
    const iss = await fp(this.secret.pair.certPem);
    this.identity = { anchors, issuer: iss };
    this.pods = podNames.map((name) => ({ name, anchors, issuer: iss, leafAt: T0 - HOUR, seenAt: 0 }));
    return this;
  }

  readTrustRoots(): Promise<TrustRoots | undefined> {
    return Promise.resolve({ data: { ...this.data }, version: String(this.version) });
  }
  writeTrustRoots(data: Record<string, string>, version: string): Promise<void> {
    if (this.conflicts > 0) {
      this.conflicts--;
      this.version++;
      return Promise.reject(new ConflictError("the object has been modified"));
    }
    if (version !== String(this.version)) return Promise.reject(new ConflictError("stale version"));
    Object.assign(this.data, data);
    this.version++;
    this.writes.push(`configmap ${Object.keys(data).join(",")}`);
    this.#propagate();
    return Promise.resolve();
  }
  readIssuer(): Promise<IssuerSecret | undefined> {
    return Promise.resolve(structuredClone(this.secret));
  }
  writeIssuer(pair: Pair, format: IssuerSecret["format"], version: string): Promise<void> {
    if (version !== this.secret.version) return Promise.reject(new ConflictError("stale secret"));
    this.secret = { pair, format, version: String(Number(version) + 1) };
    this.writes.push(`secret ${format}`);
    this.#propagate();
    return Promise.resolve();
  }

  /** Schedules the components' catch-up with the current ConfigMap and Secret, `lag` calls from now. */
  #propagate(): void {
    const bundle = this.data[BUNDLE_KEY], pair = this.secret.pair;
    const apply = async () => {
      const anchors = (await parseCerts(bundle, "b")).map((c) => c.fingerprint);
      this.identity = { anchors, issuer: await fp(pair.certPem) };
      for (const p of this.pods) p.anchors = anchors;
    };
    const slot = this.lag;
    while (this.#pending.length <= slot) this.#pending.push([]);
    this.#pending[slot].push(apply);
  }

  /** Applies every pending change now, as if the kubelet had caught up. */
  async settle(): Promise<void> {
    for (const fs of this.#pending.splice(0)) for (const f of fs) await f();
  }

  async views(): Promise<View[]> {
    this.calls++;
    const due = this.#pending.shift() ?? [];
    for (const f of due) await f();
    if (this.fixed) return this.fixed;
    const renewBefore = Date.parse(this.data[RENEW_BEFORE_KEY] ?? "");
    for (const p of this.pods) {
      if (p.leafAt < renewBefore && p.issuer !== this.identity.issuer) {
        p.issuer = this.identity.issuer;
        p.leafAt = this.clock.t;
      }
    }
    return [
      ...this.pods.map((p) => ({
        name: p.name,
        kind: "proxy" as const,
        anchors: [...p.anchors],
        issuer: p.issuer,
      })),
      {
        name: "weft/weft-identity-0 (identity)",
        kind: "identity" as const,
        anchors: [...this.identity.anchors],
        issuer: this.identity.issuer,
      },
    ];
  }
}

function context(c: FakeCluster): StepContext & { lines: string[] } {
  const lines: string[] = [];
  return {
    cluster: c,
    now: () => c.clock.t,
    sleep: (ms) => {
      c.clock.t += ms;
      return Promise.resolve();
    },
    log: (l) => lines.push(l),
    namespace: "weft",
    trustDomain: "cluster.local",
    lines,
  };
}

const WAIT = { timeoutMs: 60_000, intervalMs: 5_000 };

async function setup(pods = ["app/a", "app/b"]) {
  const old = await anchor("root.weft.cluster.local");
  const oldIssuer = await issuer(old);
  const next = await anchor("root-new.weft.cluster.local");
  const c = await new FakeCluster(old.certPem, oldIssuer).init(pods);
  return { old, oldIssuer, next, c, ctx: context(c) };
}

Deno.test("add-anchor appends the new anchor, says so, and a re-run changes nothing", async () => {
  const { old, next, c, ctx } = await setup();
  assert.deepEqual(await addAnchor(ctx, next.certPem), { step: "add-anchor", changed: true });
  const bundle = await parseCerts(c.data[BUNDLE_KEY], "b");
  assert.deepEqual(bundle.map((b) => b.fingerprint), [await fp(old.certPem), await fp(next.certPem)]);
  assert.match(ctx.lines.at(-1)!, /added anchor [0-9a-f]{64} \(root-new/);
  assert.deepEqual(await addAnchor(ctx, next.certPem), { step: "add-anchor", changed: false });
  assert.match(ctx.lines.at(-1)!, /unchanged: anchor .* is already in/);
  assert.equal(c.writes.length, 1);
});

Deno.test("add-anchor refuses a third anchor, a non-CA, an expired anchor and a missing ConfigMap", async () => {
  const { next, ctx, c } = await setup();
  await addAnchor(ctx, next.certPem);
  const third = await anchor("root-third");
  await assert.rejects(addAnchor(ctx, third.certPem), (e: Error) => {
    assert.ok(e instanceof Refused);
    return /already holds 2 anchors .* finish it with remove-anchor/.test(e.message);
  });
  const notCa = await createSelfSignedCa({ commonName: "x", lifetimeMs: HOUR, now: T0, pathLength: 0 });
  const leafLike = await createIssuer({ certPem: notCa.certPem, keyPem: notCa.keyPem }, {
    commonName: "i",
    lifetimeMs: HOUR,
    now: T0,
  });
  await assert.rejects(addAnchor(ctx, leafLike.certPem), /is not self-signed/);
  const expired = await createTrustAnchor({ commonName: "old", lifetimeMs: 1000, now: T0 - HOUR });
  await assert.rejects(addAnchor(ctx, expired.certPem), /the new anchor expired/);
  c.readTrustRoots = () => Promise.resolve(undefined);
  await assert.rejects(
    addAnchor(ctx, third.certPem),
    /ConfigMap weft\/linkerd-identity-trust-roots does not exist/,
  );
});

Deno.test("a write that conflicts with identity's own write is redone on a fresh read", async () => {
  const { next, c, ctx } = await setup();
  c.conflicts = 2;
  assert.equal((await addAnchor(ctx, next.certPem)).changed, true);
  assert.equal((await parseCerts(c.data[BUNDLE_KEY], "b")).length, 2);
});

Deno.test("wait-trust reports who is behind and returns once every component trusts both anchors", async () => {
  const { next, c, ctx } = await setup();
  c.lag = 3;
  await addAnchor(ctx, next.certPem);
  await waitTrust(ctx, WAIT);
  const behindLines = ctx.lines.filter((l) => l.startsWith("wait-trust:") && l.includes("behind"));
  assert.ok(behindLines.length >= 1, ctx.lines.join("\n"));
  assert.match(behindLines[0], /3 of 3 behind .* app\/a: does not trust [0-9a-f]{12} yet/);
  assert.match(ctx.lines.at(-1)!, /wait-trust: all 3 components trust exactly the anchors of the bundle/);
});

Deno.test("wait-trust refuses at its deadline, naming the components still behind", async () => {
  const { next, c, ctx } = await setup();
  c.lag = 1000;
  await addAnchor(ctx, next.certPem);
  await assert.rejects(waitTrust(ctx, { timeoutMs: 20_000, intervalMs: 5_000 }), (e: Error) => {
    assert.ok(e instanceof Refused);
    assert.match(
      e.message,
      /^wait-trust refused: after 20 s, 3 of 3 components are still behind \(want: they trust exactly/,
    );
    assert.match(e.message, /app\/b: does not trust/);
    return true;
  });
});

Deno.test("install-issuer refuses an anchor not in the bundle, a wrong key, and components not trusting it", async () => {
  const { next, old, c, ctx } = await setup();
  const src = { kind: "create" as const, anchor: next, lifetimeMs: 10 * HOUR, renew: false };
  await assert.rejects(
    installIssuer(ctx, src),
    /is not in weft\/linkerd-identity-trust-roots ca-bundle.crt: run add-anchor first/,
  );
  c.lag = 1000;
  await addAnchor(ctx, next.certPem);
  await assert.rejects(
    installIssuer(ctx, { ...src, anchor: { certPem: next.certPem, keyPem: old.keyPem } }),
    /the anchor key is not the private key of anchor/,
  );
  await assert.rejects(installIssuer(ctx, src), (e: Error) => {
    assert.match(
      e.message,
      /3 of 3 components do not trust anchor [0-9a-f]{12} yet \(run wait-trust\): app\/a/,
    );
    return true;
  });
  assert.deepEqual(c.writes, ["configmap ca-bundle.crt"]);
});

Deno.test("install-issuer signs with the new anchor, keeps the Secret's format, and a re-run changes nothing", async () => {
  const { next, c, ctx } = await setup();
  c.secret.format = "tls.crt";
  await addAnchor(ctx, next.certPem);
  await waitTrust(ctx, WAIT);
  const src = { kind: "create" as const, anchor: next, lifetimeMs: 10 * HOUR, renew: false };
  assert.equal((await installIssuer(ctx, src)).changed, true);
  assert.equal(c.secret.format, "tls.crt");
  const [installed] = await parseCerts(c.secret.pair.certPem, "i");
  const anchors = await parseCerts(c.data[BUNDLE_KEY], "b");
  assert.equal((await anchorOf(installed, anchors))?.fingerprint, await fp(next.certPem));
  assert.match(
    ctx.lines.at(-1)!,
    /installed issuer [0-9a-f]{64} .* signed by anchor [0-9a-f]{12}\) into weft\/linkerd-identity-issuer, replacing/,
  );
  assert.equal((await installIssuer(ctx, src)).changed, false);
  assert.match(ctx.lines.at(-1)!, /already signed by anchor/);
  assert.equal((await installIssuer(ctx, { ...src, renew: true })).changed, true, "--renew makes another");
});

Deno.test("install-issuer refuses a Secret cert-manager manages, and a given issuer under a foreign anchor", async () => {
  const { old, c, ctx } = await setup();
  const foreign = await issuer(await anchor("root.other"));
  await assert.rejects(
    installIssuer(ctx, { kind: "given", issuer: foreign }),
    /the given issuer .* is not signed by any anchor in ca-bundle.crt/,
  );
  const mine = await issuer(old);
  assert.equal((await installIssuer(ctx, { kind: "given", issuer: mine })).changed, true);
  assert.equal((await installIssuer(ctx, { kind: "given", issuer: mine })).changed, false);
  c.secret.managedBy = "cert-manager Certificate weft/linkerd-identity-issuer";
  await assert.rejects(
    installIssuer(ctx, { kind: "given", issuer: await issuer(old) }),
    /is managed by cert-manager Certificate weft\/linkerd-identity-issuer: rotate the issuer there/,
  );
});

Deno.test("wait-leaves signals renewal once identity has the new issuer, unless a signal is already there", async () => {
  const { old, c, ctx } = await setup();
  c.lag = 2;
  await installIssuer(ctx, { kind: "create", anchor: old, lifetimeMs: 10 * HOUR, renew: true });
  const r = await waitLeaves(ctx, WAIT);
  assert.equal(r.changed, true);
  const writes = c.writes.filter((w) => w.includes(RENEW_BEFORE_KEY));
  assert.equal(writes.length, 1);
  assert.match(c.data[RENEW_BEFORE_KEY], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const iss = await fp(c.secret.pair.certPem);
  assert.ok(c.pods.every((p) => p.issuer === iss));

  // Identity (issue 21, R2) already wrote a signal for this issuer: wait-leaves leaves it.
  const { old: o2, c: c2, ctx: ctx2 } = await setup();
  await installIssuer(ctx2, { kind: "create", anchor: o2, lifetimeMs: 10 * HOUR, renew: true });
  c2.data[RENEW_BEFORE_KEY] = new Date(T0 + 1000).toISOString();
  assert.equal((await waitLeaves(ctx2, WAIT)).changed, false);
  assert.equal(c2.writes.filter((w) => w.includes(RENEW_BEFORE_KEY)).length, 0);
});

Deno.test("wait-leaves refuses at its deadline when a proxy keeps its old leaf", async () => {
  const { old, c, ctx } = await setup();
  await installIssuer(ctx, { kind: "create", anchor: old, lifetimeMs: 10 * HOUR, renew: true });
  const iss = await fp(c.secret.pair.certPem);
  const stale = c.pods[0].issuer;
  c.fixed = [
    { name: "app/a", kind: "proxy", anchors: c.identity.anchors, issuer: stale },
    { name: "app/b", kind: "proxy", anchors: c.identity.anchors, issuer: iss },
    { name: "weft/id (identity)", kind: "identity", anchors: c.identity.anchors, issuer: iss },
  ];
  await assert.rejects(
    waitLeaves(ctx, { timeoutMs: 10_000, intervalMs: 5_000 }),
    /1 of 3 components are still behind \(want: they use the installed issuer\): app\/a: leaf from issuer [0-9a-f]{12}/,
  );
});

Deno.test("remove-anchor refuses while a leaf or identity depends on the old anchor, then removes it", async () => {
  const { old, next, c, ctx } = await setup();
  await addAnchor(ctx, next.certPem);
  await waitTrust(ctx, WAIT);
  await installIssuer(ctx, { kind: "create", anchor: next, lifetimeMs: 10 * HOUR, renew: false });
  // No renewal yet: every proxy's leaf is from the old issuer, under the old anchor.
  await assert.rejects(removeAnchor(ctx), (e: Error) => {
    assert.ok(e instanceof Refused);
    assert.match(e.message, /still depend on [0-9a-f]{12} \(run wait-leaves\)/);
    assert.match(
      e.message,
      /app\/a: leaf from issuer [0-9a-f]{12}, which is neither installed nor in weft-issuers.crt/,
    );
    return true;
  });
  // Once identity publishes the old issuer, the message says where it chains.
  c.data["weft-issuers.crt"] = c.secret.pair.certPem + (await issuer(old)).certPem;
  const oldIssuerPem = (await parseCerts(c.data["weft-issuers.crt"], "x"))[1];
  for (const p of c.pods) p.issuer = oldIssuerPem.fingerprint;
  await assert.rejects(
    removeAnchor(ctx),
    /app\/a: leaf from issuer [0-9a-f]{12}, which chains to a removed anchor/,
  );
  await assert.rejects(
    removeAnchor(ctx, [await fp(next.certPem)]),
    /signs the installed issuer: it cannot be removed/,
  );
  await waitLeaves(ctx, WAIT);
  assert.equal((await removeAnchor(ctx)).changed, true);
  const left = await parseCerts(c.data[BUNDLE_KEY], "b");
  assert.deepEqual(left.map((a) => a.fingerprint), [await fp(next.certPem)]);
  assert.equal((await removeAnchor(ctx)).changed, false);
  assert.match(ctx.lines.at(-1)!, /unchanged: .* holds no anchor to remove/);
});

Deno.test("remove-anchor refuses when a component cannot be read", async () => {
  const { next, c, ctx } = await setup();
  await addAnchor(ctx, next.certPem);
  await waitTrust(ctx, WAIT);
  await installIssuer(ctx, { kind: "create", anchor: next, lifetimeMs: 10 * HOUR, renew: false });
  await waitLeaves(ctx, WAIT);
  const views = await c.views();
  c.fixed = [...views.filter((v) => v.name !== "app/a"), {
    name: "app/a",
    kind: "proxy",
    error: "/metrics: HTTP 503",
  }];
  await assert.rejects(removeAnchor(ctx), /1 of 3 components still depend on .*app\/a: \/metrics: HTTP 503/);
  assert.equal((await parseCerts(c.data[BUNDLE_KEY], "b")).length, 2);
});

Deno.test("the anchor procedure ends with one anchor, the new issuer everywhere, and re-runs as a no-op", async () => {
  const { next, c, ctx } = await setup(["app/a", "app/b", "app/c"]);
  c.lag = 2;
  const steps = await rotateAnchor(ctx, { anchor: next, issuerLifetimeMs: 10 * HOUR, wait: WAIT });
  assert.deepEqual(steps.map((s) => s.step), [
    "add-anchor",
    "wait-trust",
    "install-issuer",
    "wait-leaves",
    "remove-anchor",
    "wait-trust",
  ]);
  const anchors = await parseCerts(c.data[BUNDLE_KEY], "b");
  assert.deepEqual(anchors.map((a) => a.fingerprint), [await fp(next.certPem)]);
  const iss = await fp(c.secret.pair.certPem);
  const views = await c.views();
  assert.ok(views.every((v) => v.issuer === iss && v.anchors?.join() === anchors[0].fingerprint));
  const writes = c.writes.length;
  const again = await rotateAnchor(ctx, { anchor: next, issuerLifetimeMs: 10 * HOUR, wait: WAIT });
  assert.ok(again.every((s) => !s.changed), JSON.stringify(again));
  assert.equal(c.writes.length, writes);
  const st = await status(ctx);
  assert.match(st.at(-1)!, /^next: nothing/);
});

Deno.test("the issuer procedure moves every leaf to a new issuer under the same anchor", async () => {
  const { old, oldIssuer, c, ctx } = await setup();
  const steps = await rotateIssuer(ctx, {
    source: { kind: "create", anchor: old, lifetimeMs: 10 * HOUR, renew: true },
    wait: WAIT,
  });
  assert.deepEqual(steps.map((s) => [s.step, s.changed]), [["install-issuer", true], ["wait-leaves", true]]);
  const iss = await fp(c.secret.pair.certPem);
  assert.notEqual(iss, await fp(oldIssuer.certPem));
  assert.ok(c.pods.every((p) => p.issuer === iss));
});

Deno.test("status names the next step of a rotation in progress", async () => {
  const { next, c, ctx } = await setup();
  c.lag = 1000;
  await addAnchor(ctx, next.certPem);
  const st = await status(ctx);
  assert.match(st.join("\n"), /app\/a: trusts [0-9a-f]{12}; leaf from [0-9a-f]{12} — BEHIND: does not trust/);
  assert.match(st.at(-1)!, /^next: wait-trust/);
  await c.settle();
  await waitTrust(ctx, WAIT);
  assert.match((await status(ctx)).at(-1)!, /^next: install-issuer with anchor/);
});

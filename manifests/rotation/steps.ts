/**
 * The steps of a certificate rotation (issue 21), each safe to re-run: it reads what the cluster holds, does
 * nothing when its work is already done, refuses with a `Refused` naming the failed precondition, and logs what
 * it changed. The cluster is behind `RotationCluster` (real: `kube_cluster.ts`; fakes in the tests), so the
 * decisions here are plain logic.
 *
 *   add-anchor      the new anchor joins `ca-bundle.crt` (old + new)
 *   wait-trust      every proxy and the identity controller trusts exactly the bundle's anchors
 *   install-issuer  an issuer signed by the given anchor goes into the issuer Secret
 *   wait-leaves     identity signs with the installed issuer and every proxy's leaf comes from it
 *   remove-anchor   anchors that sign neither the installed issuer nor any live leaf leave the bundle
 */
import { createIssuer } from "../../control/certs/pki.ts";
import type { Pair } from "../certs.ts";
import {
  anchorOf,
  type Cert,
  describeCert,
  isCa,
  joinBundle,
  keyMatches,
  parseCerts,
  short,
  signedBy,
} from "./bundle.ts";
import type { View } from "./observe.ts";

export const BUNDLE_KEY = "ca-bundle.crt";
export const ISSUERS_KEY = "weft-issuers.crt";
export const RENEW_BEFORE_KEY = "weft-renew-before";

export interface TrustRoots {
  /** The ConfigMap's data. */
  data: Record<string, string>;
  /** resourceVersion: a write based on this read fails with ConflictError if the object changed since. */
  version: string;
}

export interface IssuerSecret {
  pair: Pair;
  /** Which keys hold it: Linkerd's `crt.pem`/`key.pem` or `tls.crt`/`tls.key` (as cert-manager writes). */
  format: "crt.pem" | "tls.crt";
  /** Set when another tool owns the Secret (e.g. `cert-manager Certificate weft/identity-issuer`). */
  managedBy?: string;
  version: string;
}

export class ConflictError extends Error {
  override name = "ConflictError";
}

export interface RotationCluster {
  /** `namespace/name` of the trust-roots ConfigMap and of the issuer Secret, for messages. */
  readonly trustRootsName: string;
  readonly issuerSecretName: string;
  readTrustRoots(): Promise<TrustRoots | undefined>;
  /** Sets these data keys (others stay); throws ConflictError when `version` is no longer current. */
  writeTrustRoots(data: Record<string, string>, version: string): Promise<void>;
  readIssuer(): Promise<IssuerSecret | undefined>;
  writeIssuer(pair: Pair, format: IssuerSecret["format"], version: string): Promise<void>;
  /** Every running meshed pod's proxy and every identity controller. */
  views(): Promise<View[]>;
}

export interface StepContext {
  cluster: RotationCluster;
  now(): number;
  sleep(ms: number): Promise<void>;
  log(line: string): void;
  /** For the issuer's name, `identity.<namespace>.<trustDomain>` as deploy makes it. */
  namespace: string;
  trustDomain: string;
}

/** A step would not run: `precondition` says what does not hold and what to do. */
export class Refused extends Error {
  override name = "Refused";
  constructor(readonly step: string, readonly precondition: string) {
    super(`${step} refused: ${precondition}`);
  }
}

export interface StepResult {
  step: string;
  changed: boolean;
}

export interface WaitOptions {
  timeoutMs: number;
  intervalMs: number;
}

/** A component that is not where the step needs it, and why. */
export interface Behind {
  name: string;
  why: string;
}

export interface Progress {
  total: number;
  behind: Behind[];
}

// ---- reading the state ----

export interface State {
  roots: TrustRoots;
  anchors: Cert[];
  secret: IssuerSecret;
  issuer: Cert;
  /** The bundle's anchor that signed the installed issuer. */
  issuerAnchor?: Cert;
  /** The issuers identity publishes in `weft-issuers.crt` (empty when it does not). */
  liveIssuers: Cert[];
}

async function readRoots(step: string, ctx: StepContext): Promise<{ roots: TrustRoots; anchors: Cert[] }> {
  const roots = await ctx.cluster.readTrustRoots();
  const name = ctx.cluster.trustRootsName;
  if (!roots) throw new Refused(step, `the ConfigMap ${name} does not exist: deploy the mesh first`);
  const pem = roots.data[BUNDLE_KEY];
  if (!pem?.trim()) throw new Refused(step, `the ConfigMap ${name} has no ${BUNDLE_KEY}`);
  try {
    return { roots, anchors: await parseCerts(pem, `${name} ${BUNDLE_KEY}`) };
  } catch (e) {
    throw new Refused(step, (e as Error).message);
  }
}

export async function readState(step: string, ctx: StepContext): Promise<State> {
  const { roots, anchors } = await readRoots(step, ctx);
  const secret = await ctx.cluster.readIssuer();
  const sname = ctx.cluster.issuerSecretName;
  if (!secret) throw new Refused(step, `the issuer Secret ${sname} does not exist: deploy the mesh first`);
  let issuer: Cert;
  let liveIssuers: Cert[] = [];
  try {
    [issuer] = await parseCerts(secret.pair.certPem, `${sname} ${secret.format}`);
    const live = roots.data[ISSUERS_KEY];
    if (live?.trim()) liveIssuers = await parseCerts(live, `${ctx.cluster.trustRootsName} ${ISSUERS_KEY}`);
  } catch (e) {
    throw new Refused(step, (e as Error).message);
  }
  const issuerAnchor = await anchorOf(issuer, anchors);
  return { roots, anchors, secret, issuer, liveIssuers, ...(issuerAnchor ? { issuerAnchor } : {}) };
}

/** Runs a read-modify-write of the ConfigMap again when someone else wrote it in between (identity does). */
async function retryOnConflict<T>(step: string, fn: () => Promise<T>): Promise<T> {
  for (let i = 0;; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof ConflictError) || i >= 4) {
        if (e instanceof ConflictError) {
          throw new Refused(step, `${e.message} (changed 5 times while writing)`);
        }
        throw e;
      }
    }
  }
}

// ---- the reports the waits and preconditions share ----

/** Components not trusting exactly `anchors` (missing one, or still trusting one no longer in the bundle). */
export function trustBehind(views: View[], anchors: Cert[]): Progress {
  const want = new Set(anchors.map((a) => a.fingerprint));
  const behind: Behind[] = [];
  for (const v of views) {
    if (v.error || !v.anchors) {
      behind.push({ name: v.name, why: v.error ?? "reports no trust anchors" });
      continue;
    }
    const has = new Set(v.anchors);
    const missing = [...want].filter((f) => !has.has(f)).map(short);
    const extra = [...has].filter((f) => !want.has(f)).map(short);
    const why = [
      missing.length ? `does not trust ${missing.join(", ")} yet` : "",
      extra.length ? `still trusts ${extra.join(", ")}` : "",
    ].filter((s) => s).join("; ");
    if (why) behind.push({ name: v.name, why });
  }
  if (!views.some((v) => v.kind === "identity")) {
    behind.push({ name: "identity", why: "no identity controller" });
  }
  return { total: views.length, behind };
}

/** Components whose leaf (proxies) or signing issuer (identity) is not `issuer`. */
export function leavesBehind(views: View[], issuer: Cert): Progress {
  const behind: Behind[] = [];
  for (const v of views) {
    if (!v.issuer) behind.push({ name: v.name, why: v.error ?? "reports no issuer" });
    else if (v.issuer !== issuer.fingerprint) {
      behind.push({
        name: v.name,
        why: v.kind === "identity"
          ? `signs with issuer ${short(v.issuer)}, not the installed ${
            short(issuer.fingerprint)
          } (not reloaded yet)`
          : `leaf from issuer ${short(v.issuer)}`,
      });
    }
  }
  if (!views.some((v) => v.kind === "identity")) {
    behind.push({ name: "identity", why: "no identity controller" });
  }
  return { total: views.length, behind };
}

function listBehind(behind: Behind[], max = 8): string {
  const shown = behind.slice(0, max).map((b) => `${b.name}: ${b.why}`).join("; ");
  return behind.length > max ? `${shown}; and ${behind.length - max} more` : shown;
}

/**
 * Polls `check` until nothing is behind; logs who is behind whenever that changes (and every 30 s); refuses
 * at the deadline, naming who is still behind.
 */
async function waitUntil(
  step: string,
  ctx: StepContext,
  what: string,
  check: () => Promise<Progress>,
  o: WaitOptions,
): Promise<Progress> {
  const start = ctx.now();
  let lastShown = "";
  let lastAt = 0;
  for (;;) {
    const p = await check();
    const elapsed = ((ctx.now() - start) / 1000).toFixed(0);
    if (p.behind.length === 0) {
      ctx.log(`${step}: all ${p.total} components ${what} (${elapsed} s)`);
      return p;
    }
    if (ctx.now() - start >= o.timeoutMs) {
      throw new Refused(
        step,
        `after ${elapsed} s, ${p.behind.length} of ${p.total} components are still behind (want: they ${what}): ${
          listBehind(p.behind)
        }`,
      );
    }
    const shown = listBehind(p.behind);
    if (shown !== lastShown || ctx.now() - lastAt >= 30_000) {
      ctx.log(`${step}: ${p.behind.length} of ${p.total} behind after ${elapsed} s: ${shown}`);
      lastShown = shown;
      lastAt = ctx.now();
    }
    await ctx.sleep(o.intervalMs);
  }
}

// ---- the steps ----

/** Checks a certificate offered as a trust anchor: one self-signed CA, valid now. */
export async function parseAnchor(step: string, pem: string, what: string, now: number): Promise<Cert> {
  let certs: Cert[];
  try {
    certs = await parseCerts(pem, what);
  } catch (e) {
    throw new Refused(step, (e as Error).message);
  }
  if (certs.length !== 1) throw new Refused(step, `${what} holds ${certs.length} certificates, want 1`);
  const [a] = certs;
  if (!isCa(a)) throw new Refused(step, `${what} ${short(a.fingerprint)} is not a CA certificate`);
  if (!(await signedBy(a, a))) throw new Refused(step, `${what} ${short(a.fingerprint)} is not self-signed`);
  if (a.notBefore.getTime() > now) {
    throw new Refused(step, `${what} is not valid before ${a.notBefore.toISOString()}`);
  }
  if (a.notAfter.getTime() <= now) throw new Refused(step, `${what} expired ${a.notAfter.toISOString()}`);
  return a;
}

/** 1. The new anchor joins the bundle, after the anchors already there. */
export async function addAnchor(ctx: StepContext, anchorPem: string): Promise<StepResult> {
  const step = "add-anchor";
  const anchor = await parseAnchor(step, anchorPem, "the new anchor", ctx.now());
  return await retryOnConflict(step, async () => {
    const { roots, anchors } = await readRoots(step, ctx);
    const name = `${ctx.cluster.trustRootsName} ${BUNDLE_KEY}`;
    if (anchors.some((a) => a.fingerprint === anchor.fingerprint)) {
      ctx.log(
        `${step}: unchanged: anchor ${
          describeCert(anchor)
        } is already in ${name} (${anchors.length} anchors)`,
      );
      return { step, changed: false };
    }
    if (anchors.length > 1) {
      throw new Refused(
        step,
        `${name} already holds ${anchors.length} anchors (${
          anchors.map((a) => short(a.fingerprint)).join(", ")
        }): ` +
          `a rotation is in progress; finish it with remove-anchor before adding another`,
      );
    }
    await ctx.cluster.writeTrustRoots({ [BUNDLE_KEY]: joinBundle([...anchors, anchor]) }, roots.version);
    ctx.log(
      `${step}: added anchor ${anchor.fingerprint} (${anchor.subject}) to ${name}; it now holds ` +
        `${anchors.map((a) => describeCert(a)).join(", ")} (old) and ${describeCert(anchor)} (new)`,
    );
    return { step, changed: true };
  });
}

/** Who does not trust exactly the bundle's anchors now. */
export async function trustProgress(step: string, ctx: StepContext): Promise<Progress> {
  const { anchors } = await readRoots(step, ctx);
  return trustBehind(await ctx.cluster.views(), anchors);
}

/** 2. Waits until every proxy and identity trusts exactly the bundle's anchors. Changes nothing. */
export async function waitTrust(ctx: StepContext, o: WaitOptions): Promise<StepResult> {
  const step = "wait-trust";
  await waitUntil(step, ctx, "trust exactly the anchors of the bundle", () => trustProgress(step, ctx), o);
  return { step, changed: false };
}

export type IssuerSource =
  /** Sign a new issuer with this anchor (its key stays with the operator). */
  | { kind: "create"; anchor: Pair; lifetimeMs: number; renew: boolean }
  /** Install this issuer, made elsewhere (e.g. `deno task certs`). */
  | { kind: "given"; issuer: Pair };

/** 3. Installs an issuer signed by an anchor of the bundle that every component trusts. */
export async function installIssuer(ctx: StepContext, src: IssuerSource): Promise<StepResult> {
  const step = "install-issuer";
  const now = ctx.now();
  const state = await readState(step, ctx);
  const secretName = ctx.cluster.issuerSecretName;
  if (state.secret.managedBy) {
    throw new Refused(
      step,
      `the issuer Secret ${secretName} is managed by ${state.secret.managedBy}: rotate the issuer there ` +
        `(a new Secret is picked up by identity like any other), then run wait-leaves`,
    );
  }
  const inBundle = (fp: string) => state.anchors.find((a) => a.fingerprint === fp);
  let anchor: Cert;
  if (src.kind === "create") {
    const a = await parseAnchor(step, src.anchor.certPem, "the anchor", now);
    const found = inBundle(a.fingerprint);
    if (!found) {
      throw new Refused(
        step,
        `anchor ${
          describeCert(a)
        } is not in ${ctx.cluster.trustRootsName} ${BUNDLE_KEY}: run add-anchor first`,
      );
    }
    if (!(await keyMatches(a, src.anchor.keyPem, "the anchor key").catch(() => false))) {
      throw new Refused(step, `the anchor key is not the private key of anchor ${short(a.fingerprint)}`);
    }
    anchor = found;
    if (!src.renew && state.issuerAnchor?.fingerprint === anchor.fingerprint) {
      ctx.log(
        `${step}: unchanged: the installed issuer ${
          describeCert(state.issuer)
        } is already signed by anchor ` +
          `${describeCert(anchor)} (pass --renew for a new issuer under the same anchor)`,
      );
      return { step, changed: false };
    }
  } else {
    let certs: Cert[];
    try {
      certs = await parseCerts(src.issuer.certPem, "the given issuer");
    } catch (e) {
      throw new Refused(step, (e as Error).message);
    }
    const given = certs[0];
    if (!isCa(given)) throw new Refused(step, `the given issuer ${short(given.fingerprint)} is not a CA`);
    if (given.notAfter.getTime() <= now) {
      throw new Refused(step, `the given issuer expired ${given.notAfter.toISOString()}`);
    }
    if (!(await keyMatches(given, src.issuer.keyPem, "the given issuer key").catch(() => false))) {
      throw new Refused(step, `the given issuer key is not the private key of ${short(given.fingerprint)}`);
    }
    const a = await anchorOf(given, state.anchors);
    if (!a) {
      throw new Refused(
        step,
        `the given issuer ${describeCert(given)} is not signed by any anchor in ${BUNDLE_KEY}`,
      );
    }
    anchor = a;
    if (given.fingerprint === state.issuer.fingerprint) {
      ctx.log(`${step}: unchanged: ${secretName} already holds issuer ${describeCert(given)}`);
      return { step, changed: false };
    }
  }
  // Leaves of the new issuer are only accepted by peers that trust its anchor.
  const views = await ctx.cluster.views();
  const behind = trustBehind(views, [anchor]).behind.filter((b) => !/^still trusts/.test(b.why));
  if (behind.length) {
    throw new Refused(
      step,
      `${behind.length} of ${views.length} components do not trust anchor ${short(anchor.fingerprint)} yet ` +
        `(run wait-trust): ${listBehind(behind)}`,
    );
  }
  let pair: Pair;
  if (src.kind === "given") pair = src.issuer;
  else {
    const made = await createIssuer(src.anchor, {
      commonName: `identity.${ctx.namespace}.${ctx.trustDomain}`,
      lifetimeMs: src.lifetimeMs,
      now,
      skewMs: 60_000,
    });
    pair = { certPem: made.certPem, keyPem: made.keyPem };
  }
  const [issuer] = await parseCerts(pair.certPem, "the new issuer");
  try {
    await ctx.cluster.writeIssuer(pair, state.secret.format, state.secret.version);
  } catch (e) {
    if (e instanceof ConflictError) {
      throw new Refused(step, `${secretName} changed while this step ran (${e.message}); run it again`);
    }
    throw e;
  }
  ctx.log(
    `${step}: installed issuer ${issuer.fingerprint} (${issuer.subject}, expires ${issuer.notAfter.toISOString()}, ` +
      `signed by anchor ${short(anchor.fingerprint)}) into ${secretName}, replacing ${
        describeCert(state.issuer)
      }` +
      (state.issuerAnchor ? ` (signed by anchor ${short(state.issuerAnchor.fingerprint)})` : ""),
  );
  return { step, changed: true };
}

/** Who is not on the installed issuer now. */
export async function leafProgress(step: string, ctx: StepContext): Promise<Progress> {
  const state = await readState(step, ctx);
  return leavesBehind(await ctx.cluster.views(), state.issuer);
}

/** RFC 3339 UTC, rounded up to the second. */
export function rfc3339(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, "Z");
}

/**
 * Tells proxies to renew now, unless a signal for the installed issuer is already there: `weft-renew-before`
 * at or after the issuer's notBefore (identity writes one when it loads an issuer). Only called once identity
 * signs with the installed issuer, so every leaf older than now is from an older issuer or already renewable.
 */
async function signalRenewal(step: string, ctx: StepContext): Promise<boolean> {
  return await retryOnConflict(step, async () => {
    const state = await readState(step, ctx);
    const current = Date.parse(state.roots.data[RENEW_BEFORE_KEY] ?? "");
    if (current >= state.issuer.notBefore.getTime()) return false;
    const at = rfc3339(ctx.now());
    await ctx.cluster.writeTrustRoots({ [RENEW_BEFORE_KEY]: at }, state.roots.version);
    ctx.log(
      `${step}: wrote ${RENEW_BEFORE_KEY}=${at} to ${ctx.cluster.trustRootsName} (no renewal signal for issuer ` +
        `${short(state.issuer.fingerprint)} yet): proxies with older leaves renew within 30 s of seeing it`,
    );
    return true;
  });
}

/** 4. Waits until identity signs with the installed issuer and every proxy's leaf is from it. */
export async function waitLeaves(ctx: StepContext, o: WaitOptions): Promise<StepResult> {
  const step = "wait-leaves";
  let signalled = false;
  let wrote = false;
  await waitUntil(step, ctx, "use the installed issuer", async () => {
    const p = await leafProgress(step, ctx);
    if (!signalled && !p.behind.some((b) => b.name === "identity" || / \(identity\)$/.test(b.name))) {
      wrote = await signalRenewal(step, ctx);
      signalled = true;
    }
    return p;
  }, o);
  return { step, changed: wrote };
}

/**
 * 5. Drops from the bundle every anchor that does not sign the installed issuer (or only those named),
 * refusing while identity or any proxy's leaf still depends on one of them.
 */
export async function removeAnchor(ctx: StepContext, only?: string[]): Promise<StepResult> {
  const step = "remove-anchor";
  return await retryOnConflict(step, async () => {
    const state = await readState(step, ctx);
    const bundleName = `${ctx.cluster.trustRootsName} ${BUNDLE_KEY}`;
    const keep = state.issuerAnchor;
    if (!keep) {
      throw new Refused(
        step,
        `the installed issuer ${describeCert(state.issuer)} is signed by no anchor in ${bundleName}`,
      );
    }
    if (only?.some((f) => f === keep.fingerprint || keep.fingerprint.startsWith(f))) {
      throw new Refused(
        step,
        `anchor ${describeCert(keep)} signs the installed issuer: it cannot be removed`,
      );
    }
    const remove = state.anchors.filter((a) =>
      a.fingerprint !== keep.fingerprint && (!only || only.some((f) => a.fingerprint.startsWith(f)))
    );
    if (remove.length === 0) {
      ctx.log(
        `${step}: unchanged: ${bundleName} holds no anchor to remove (${
          state.anchors.map((a) => describeCert(a)).join(", ")
        }; ${describeCert(keep)} signs the installed issuer)`,
      );
      return { step, changed: false };
    }
    const kept = state.anchors.filter((a) => !remove.includes(a));
    const views = await ctx.cluster.views();
    const known = [state.issuer, ...state.liveIssuers];
    const blockers: Behind[] = [];
    for (const v of views) {
      if (!v.issuer) {
        blockers.push({ name: v.name, why: v.error ?? "reports no issuer" });
        continue;
      }
      if (v.kind === "identity" && v.issuer !== state.issuer.fingerprint) {
        blockers.push({ name: v.name, why: `still signs with issuer ${short(v.issuer)}` });
        continue;
      }
      const cert = known.find((c) => c.fingerprint === v.issuer);
      if (!cert) {
        blockers.push({
          name: v.name,
          why: `leaf from issuer ${short(v.issuer)}, which is neither installed nor in ${ISSUERS_KEY}`,
        });
      } else if (!(await anchorOf(cert, kept))) {
        blockers.push({
          name: v.name,
          why: `leaf from issuer ${short(v.issuer)}, which chains to a removed anchor`,
        });
      }
    }
    if (!views.some((v) => v.kind === "identity")) {
      blockers.push({ name: "identity", why: "no identity controller" });
    }
    if (blockers.length) {
      throw new Refused(
        step,
        `${blockers.length} of ${views.length} components still depend on ${
          remove.map((a) => short(a.fingerprint)).join(", ")
        } (run wait-leaves): ${listBehind(blockers)}`,
      );
    }
    await ctx.cluster.writeTrustRoots({ [BUNDLE_KEY]: joinBundle(kept) }, state.roots.version);
    ctx.log(
      `${step}: removed ${
        remove.map((a) => `${a.fingerprint} (${a.subject})`).join(", ")
      } from ${bundleName}; ` +
        `it now holds ${kept.map((a) => describeCert(a)).join(", ")}`,
    );
    return { step, changed: true };
  });
}

/** `status`: the bundle, the issuer, the renewal signal, each component, and the next step to run. */
export async function status(ctx: StepContext): Promise<string[]> {
  const step = "status";
  const state = await readState(step, ctx);
  const views = await ctx.cluster.views();
  const out: string[] = [];
  out.push(`trust anchors in ${ctx.cluster.trustRootsName} ${BUNDLE_KEY}:`);
  for (const a of state.anchors) {
    out.push(
      `  ${a.fingerprint} ${a.subject}, expires ${a.notAfter.toISOString()}` +
        (a.fingerprint === state.issuerAnchor?.fingerprint ? " (signs the installed issuer)" : ""),
    );
  }
  out.push(
    `issuer in ${ctx.cluster.issuerSecretName}: ${state.issuer.fingerprint} ${state.issuer.subject}, expires ` +
      `${state.issuer.notAfter.toISOString()}, ` +
      (state.issuerAnchor
        ? `signed by anchor ${short(state.issuerAnchor.fingerprint)}`
        : "signed by NO anchor of the bundle") +
      (state.secret.managedBy ? `, managed by ${state.secret.managedBy}` : ""),
  );
  if (state.liveIssuers.length) {
    out.push(
      `live issuers (${ISSUERS_KEY}): ${state.liveIssuers.map((c) => short(c.fingerprint)).join(", ")}`,
    );
  }
  out.push(`${RENEW_BEFORE_KEY}: ${state.roots.data[RENEW_BEFORE_KEY] ?? "(not set)"}`);
  const trust = trustBehind(views, state.anchors);
  const leaves = leavesBehind(views, state.issuer);
  out.push(`components (${views.length}):`);
  for (const v of views) {
    const issues = [...trust.behind, ...leaves.behind].filter((b) => b.name === v.name).map((b) => b.why);
    out.push(
      `  ${v.name}: trusts ${v.anchors?.map(short).join(", ") ?? "?"}; ${
        v.kind === "identity" ? "signs with" : "leaf from"
      } ${v.issuer ? short(v.issuer) : "?"}${
        issues.length ? ` — BEHIND: ${[...new Set(issues)].join("; ")}` : ""
      }`,
    );
  }
  out.push(`next: ${nextStep(state, trust, leaves)}`);
  return out;
}

function nextStep(state: State, trust: Progress, leaves: Progress): string {
  if (!state.issuerAnchor) return "install an issuer signed by an anchor of the bundle (install-issuer)";
  if (trust.behind.length) return "wait-trust (components do not trust exactly the bundle yet)";
  if (state.anchors.length > 1) {
    const newest = state.anchors[state.anchors.length - 1];
    if (state.issuerAnchor.fingerprint !== newest.fingerprint) {
      return `install-issuer with anchor ${short(newest.fingerprint)}`;
    }
    if (leaves.behind.length) return "wait-leaves";
    return "remove-anchor";
  }
  if (leaves.behind.length) return "wait-leaves";
  return "nothing: one anchor, every component trusts it and uses the installed issuer";
}

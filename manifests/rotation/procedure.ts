/**
 * The two rotations as sequences of the steps in `steps.ts`, each step timed. Re-running a procedure after an
 * interruption is safe: the steps already done report `unchanged` and the waits return at once.
 *
 *   anchor  add-anchor, wait-trust, install-issuer (signed by the new anchor), wait-leaves, remove-anchor,
 *           wait-trust (every component has dropped the old anchor)
 *   issuer  install-issuer (a new issuer under an anchor every component trusts), wait-leaves
 */
import type { Pair } from "../certs.ts";
import {
  addAnchor,
  installIssuer,
  type IssuerSource,
  removeAnchor,
  type StepContext,
  type StepResult,
  waitLeaves,
  type WaitOptions,
  waitTrust,
} from "./steps.ts";

export interface Timed extends StepResult {
  seconds: number;
}

async function timed(ctx: StepContext, run: () => Promise<StepResult>): Promise<Timed> {
  const t0 = ctx.now();
  const r = await run();
  return { ...r, seconds: (ctx.now() - t0) / 1000 };
}

export async function rotateAnchor(
  ctx: StepContext,
  o: { anchor: Pair; issuerLifetimeMs: number; wait: WaitOptions },
): Promise<Timed[]> {
  const out: Timed[] = [];
  out.push(await timed(ctx, () => addAnchor(ctx, o.anchor.certPem)));
  out.push(await timed(ctx, () => waitTrust(ctx, o.wait)));
  out.push(
    await timed(
      ctx,
      () =>
        installIssuer(ctx, {
          kind: "create",
          anchor: o.anchor,
          lifetimeMs: o.issuerLifetimeMs,
          renew: false,
        }),
    ),
  );
  out.push(await timed(ctx, () => waitLeaves(ctx, o.wait)));
  out.push(await timed(ctx, () => removeAnchor(ctx)));
  out.push(await timed(ctx, () => waitTrust(ctx, o.wait)));
  return out;
}

export async function rotateIssuer(
  ctx: StepContext,
  o: { source: IssuerSource; wait: WaitOptions },
): Promise<Timed[]> {
  const out: Timed[] = [];
  out.push(await timed(ctx, () => installIssuer(ctx, o.source)));
  out.push(await timed(ctx, () => waitLeaves(ctx, o.wait)));
  return out;
}

export function summary(mode: string, steps: Timed[]): string {
  const total = steps.reduce((s, t) => s + t.seconds, 0);
  return `${mode} rotation done in ${total.toFixed(1)} s: ` +
    steps.map((t) => `${t.step} ${t.seconds.toFixed(1)} s${t.changed ? "" : " (unchanged)"}`).join(", ");
}

/**
 * Linkerd users bring their manifests: each case under `manifests/` is created with a server-side
 * dry run (CRD schema + weft's admission webhooks, nothing stored) in a fresh namespace and must get
 * the verdict Linkerd gives it. Every disagreement is listed before the test fails, so one run shows
 * the whole gap.
 */
import assert from "node:assert/strict";
import { inNamespace, kc, kubectl, requireMesh } from "../e2e/lib/kube.ts";
import { agrees, type Case, loadCases, type Outcome, uncovered } from "./verdicts.ts";

const DIR = new URL("./manifests/", import.meta.url);
const PARALLEL = 4;

function withNamespace(c: Case, ns: string): string {
  const o = structuredClone(c.object) as { metadata: Record<string, unknown> };
  o.metadata.namespace = ns;
  return JSON.stringify(o);
}

async function dryRunCreate(c: Case, ns: string): Promise<Outcome> {
  const r = await kubectl(["-n", ns, "create", "--dry-run=server", "-f", "-"], {
    stdin: withNamespace(c, ns),
    timeoutMs: 30_000,
  });
  return r.code === 0 ? { ok: true } : { ok: false, message: (r.stderr || r.stdout).trim() };
}

async function inParallel<T, R>(items: T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

Deno.test("Linkerd parity: every served kind and version has an accepted case", async () => {
  assert.deepStrictEqual(uncovered(await loadCases(DIR)), []);
});

Deno.test("Linkerd parity: each manifest gets Linkerd's verdict from a server-side dry run", async () => {
  await requireMesh();
  const cases = await loadCases(DIR);
  await inNamespace("weft-compat", {}, async (ns) => {
    for (const c of cases.filter((c) => c.setup)) {
      await kc(["-n", ns, "create", "-f", "-"], { stdin: withNamespace(c, ns) });
    }
    const checked = cases.filter((c) => !c.setup);
    const results = await inParallel(
      checked,
      PARALLEL,
      async (c) => ({ c, ...agrees(c, await dryRunCreate(c, ns)) }),
    );
    const differ = results.filter((r) => !r.agree);
    console.log(`Linkerd parity: ${results.length - differ.length} of ${results.length} verdicts agree`);
    // WEFT_COMPAT_SHOW=1 prints every refusal weft gives, to pick a case's message fragment from.
    if (Deno.env.get("WEFT_COMPAT_SHOW") === "1") {
      for (const r of results.filter((r) => r.c.verdict === "refuse")) {
        console.log(`  REFUSAL ${r.c.file} ${r.c.kind}/${r.c.name}: ${r.detail}`);
      }
    }
    for (const r of differ) {
      console.log(`  DIFFERS ${r.c.file} ${r.c.apiVersion} ${r.c.kind}/${r.c.name}: ${r.detail}`);
    }
    assert.deepStrictEqual(differ.map((r) => `${r.c.file} ${r.c.kind}/${r.c.name}`), []);
  });
});

/** The copier's bounds, with a scripted API (its API calls are tested against a real API server). */
import assert from "node:assert/strict";
import { TrustRootsCopier, type TrustRootsCopyApi } from "./trust_roots_copy.ts";

const PEM = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";

function api(over: Partial<TrustRootsCopyApi> = {}) {
  const created: string[] = [];
  const a: TrustRootsCopyApi = {
    readSource: () => Promise.resolve({ "ca-bundle.crt": PEM }),
    listCopies: () => Promise.resolve([]),
    create: (ns) => {
      created.push(ns);
      return Promise.resolve("created");
    },
    patch: () => Promise.resolve(),
    ...over,
  };
  return { a, created };
}

Deno.test("trust roots copier: a slow API server delays an admission by the timeout at most, and the copy still lands", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const { a, created } = api({
    create: async (ns) => {
      await gate;
      created.push(ns);
      return "created";
    },
  });
  const c = new TrustRootsCopier(a, { controlPlaneNamespace: "weft", log: () => {}, ensureTimeoutMs: 50 });
  const t0 = Date.now();
  await c.ensure("shop");
  assert.ok(Date.now() - t0 < 1000);
  assert.deepEqual(created, []);
  release();
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(created, ["shop"]);
  // Known now: no second create.
  await c.ensure("shop");
  assert.deepEqual(created, ["shop"]);
});

Deno.test("trust roots copier: an API error is logged and the admission goes on; the next one retries", async () => {
  let fail = true;
  const logs: string[] = [];
  const { a, created } = api({
    create: (ns) => {
      if (fail) return Promise.reject(new Error("HTTP 403: forbidden"));
      created.push(ns);
      return Promise.resolve("created");
    },
  });
  const c = new TrustRootsCopier(a, { controlPlaneNamespace: "weft", log: (l) => logs.push(l) });
  await c.ensure("shop");
  assert.deepEqual(logs, ["trust roots: cannot copy into namespace shop: HTTP 403: forbidden"]);
  fail = false;
  await c.ensure("shop");
  assert.deepEqual(created, ["shop"]);
});

Deno.test("trust roots copier: a copy that cannot be patched does not keep the others on the old bundle", async () => {
  const logs: string[] = [];
  const patched: string[] = [];
  const stale = { "ca-bundle.crt": "old" };
  const { a } = api({
    listCopies: () =>
      Promise.resolve([
        { namespace: "going", data: stale },
        { namespace: "shop", data: stale },
        { namespace: "books", data: stale },
      ]),
    patch: (ns) => {
      if (ns === "going") return Promise.reject(new Error("HTTP 403: namespace going is being terminated"));
      patched.push(ns);
      return Promise.resolve();
    },
  });
  const c = new TrustRootsCopier(a, { controlPlaneNamespace: "weft", log: (l) => logs.push(l) });
  assert.deepEqual(await c.sync(), ["shop", "books"]);
  assert.deepEqual(patched, ["shop", "books"]);
  assert.deepEqual(logs, [
    "trust roots: updated the copies in shop, books",
    "trust roots: cannot update the copies in going (HTTP 403: namespace going is being terminated)",
  ]);
  // The same failure next time is not logged again.
  await c.sync();
  assert.equal(logs.filter((l) => l.includes("cannot update")).length, 1);
});

Deno.test("trust roots copier: a follower reads the source but patches nothing; wake() on gaining leadership syncs at once", async () => {
  const patched: string[] = [];
  let source = { "ca-bundle.crt": PEM };
  const { a, created } = api({
    readSource: () => Promise.resolve(source),
    listCopies: () => Promise.resolve([{ namespace: "shop", data: { "ca-bundle.crt": "old" } }]),
    patch: (ns) => {
      patched.push(ns);
      return Promise.resolve();
    },
  });
  let leading = false;
  const c = new TrustRootsCopier(a, {
    controlPlaneNamespace: "weft",
    log: () => {},
    canWrite: () => leading,
  });
  const ctl = new AbortController();
  const running = c.run(3_600_000, ctl.signal);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(patched, []);
  // Still hot: the source it read is the one a follower's admission copies.
  source = { "ca-bundle.crt": PEM + PEM };
  assert.deepEqual(await c.sync(), []);
  assert.deepEqual(c.source(), source);
  await c.ensure("books");
  assert.deepEqual(created, ["books"]);
  leading = true;
  c.wake();
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(patched, ["shop"]);
  ctl.abort();
  await running;
});

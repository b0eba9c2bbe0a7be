import assert from "node:assert/strict";
import { parseServiceMirrorConfig } from "./config.ts";

Deno.test("service mirror config: defaults, environment fallback, refusals", () => {
  const c = parseServiceMirrorConfig(["--link=east"], {});
  assert.deepEqual(c, {
    linkName: "east",
    namespace: "weft-multicluster",
    adminHost: "0.0.0.0",
    adminPort: 9999,
    kubeconfig: undefined,
    unlink: false,
    targetClusterName: undefined,
    resyncPeriodMs: 60_000,
  });
  const e = parseServiceMirrorConfig(["--link=east", "--unlink", "--resync-period=30s"], {
    KUBECONFIG: "/k",
    WEFT_MC_NAMESPACE: "mc",
  });
  assert.equal(e.kubeconfig, "/k");
  assert.equal(e.namespace, "mc");
  assert.equal(e.unlink, true);
  assert.equal(e.resyncPeriodMs, 30_000);
  assert.throws(() => parseServiceMirrorConfig([], {}), /--link is required/);
  assert.throws(() => parseServiceMirrorConfig(["--link=a", "--lnk=b"], {}), /unknown flag --lnk/);
  assert.throws(() => parseServiceMirrorConfig(["--link=a", "--resync-period=10ms"], {}), /at least 1s/);
});

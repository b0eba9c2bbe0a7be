// Cluster e2e: the validating webhook refuses an invalid ServiceProfile with a message naming the bad field,
// and admits a valid one (so the refusal is about the field, not about profiles in general).
import assert from "node:assert/strict";
import { inNamespace, kc, kubectl, requireMesh } from "./lib/kube.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

function profile(ns: string, pathRegex: string, ttl: string): string {
  return JSON.stringify({
    apiVersion: "linkerd.io/v1alpha2",
    kind: "ServiceProfile",
    metadata: { name: `backend.${ns}.svc.cluster.local` },
    spec: {
      routes: [{ name: "GET /items", condition: { method: "GET", pathRegex } }],
      retryBudget: { retryRatio: 0.2, minRetriesPerSecond: 10, ttl },
    },
  });
}

Deno.test({
  name: "e2e: an invalid ServiceProfile is refused by the webhook with its message",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-sp", {}, async (ns) => {
      // The CRD schema accepts any string here; only the webhook compiles the regex and parses the duration.
      const bad = await kubectl(["-n", ns, "create", "-f", "-"], {
        stdin: profile(ns, "/items/([0-9]+", "10s"),
      });
      assert.notEqual(bad.code, 0, `an unterminated regex was admitted: ${bad.stdout}`);
      assert.match(
        bad.stderr,
        /admission webhook .* denied the request/,
        `not refused by a webhook: ${bad.stderr}`,
      );
      assert.match(bad.stderr, /pathRegex/, `the message does not name the field: ${bad.stderr}`);

      const badTtl = await kubectl(["-n", ns, "create", "-f", "-"], {
        stdin: profile(ns, "/items/[0-9]+", "ten"),
      });
      assert.notEqual(badTtl.code, 0, `a ttl of "ten" was admitted: ${badTtl.stdout}`);
      assert.match(
        badTtl.stderr,
        /denied the request.*ttl/s,
        `the message does not name ttl: ${badTtl.stderr}`,
      );

      await kc(["-n", ns, "create", "-f", "-"], { stdin: profile(ns, "/items/[0-9]+", "10s") });
    });
  },
});

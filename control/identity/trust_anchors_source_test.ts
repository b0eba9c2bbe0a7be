import assert from "node:assert/strict";
import { FakeEventSource } from "../k8s/mod.ts";
import type { TrustAnchors } from "./issuer.ts";
import { makeCa } from "./test_pki.ts";
import { ConfigMapAnchorsSource, type ConfigMapObject } from "./trust_anchors_source.ts";

const cm = (data: Record<string, string>, name = "linkerd-identity-trust-roots"): ConfigMapObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { namespace: "weft", name },
  data,
});

async function until(what: string, cond: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("the watched bundle: changes are delivered, a bundle that does not parse is refused and the old stays", async () => {
  const a = await makeCa();
  const b = await makeCa(Date.now(), { anchorCn: "root-2" });
  const source = new FakeEventSource<ConfigMapObject>("configmaps");
  source.apply(cm({ "ca-bundle.crt": a.anchorPem }));
  const got: TrustAnchors[] = [];
  const errors: string[] = [];
  let changes = 0;
  const ctl = new AbortController();
  const done = new ConfigMapAnchorsSource(source, "weft", "linkerd-identity-trust-roots", "ca-bundle.crt")
    .run({
      onAnchors: (x) => got.push(x),
      onError: (e) => errors.push(e),
      onConfigMap: () => changes++,
    }, ctl.signal);
  try {
    await until("the first bundle", () => got.length === 1);
    assert.equal(got[0].certs.length, 1);
    source.apply(cm({ "ca-bundle.crt": a.anchorPem + b.anchorPem }));
    await until("old + new", () => got.length === 2);
    assert.equal(got[1].certs.length, 2);
    // Only identity's keys changed: no new anchors, but the change is passed on.
    source.apply(cm({ "ca-bundle.crt": a.anchorPem + b.anchorPem, "weft-issuers.crt": "x" }));
    await until("the ConfigMap change", () => changes === 3);
    assert.equal(got.length, 2);
    source.apply(cm({ "ca-bundle.crt": "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n" }));
    await until("the refusal", () => errors.length === 1);
    assert.match(
      errors[0],
      /configmap weft\/linkerd-identity-trust-roots key ca-bundle\.crt: .*keeping the current trust anchors/,
    );
    source.apply(cm({ "ca-bundle.crt": "" }));
    await until("the empty bundle refused", () => errors.length === 2);
    assert.match(errors[1], /is empty or missing; keeping/);
    source.apply(cm({ "ca-bundle.crt": b.anchorPem }, "unrelated"));
    source.apply(cm({ "ca-bundle.crt": b.anchorPem }));
    await until("the new anchor alone", () => got.length === 3);
    assert.equal(got[2].certs[0].subject, "CN=root-2");
  } finally {
    ctl.abort();
    await done;
  }
});

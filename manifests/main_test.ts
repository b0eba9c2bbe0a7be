import assert from "node:assert/strict";
import { defaultCertsDir, parseArgs, UsageError } from "./main.ts";

const env = { KUBECONFIG: "/k/a.kubeconfig:/k/b.kubeconfig", HOME: "/home/u" };

Deno.test("deploy defaults: KUBECONFIG's first file, the local image with Never, 5m timeout", () => {
  const a = parseArgs(["deploy"], env);
  assert.equal(a.kubeconfig, "/k/a.kubeconfig");
  assert.equal(a.image, "localhost/weft:dev");
  assert.equal(a.imagePullPolicy, "Never");
  assert.equal(a.timeoutMs, 300_000);
  assert.deepEqual(a.target, { noImageLoad: false });
  assert.equal(parseArgs(["deploy"], { HOME: "/h" }).kubeconfig, "/h/.kube/config");
});

Deno.test("deploy flags: kind, registry images, identity files", () => {
  assert.deepEqual(parseArgs(["deploy", "--kind"], env).target, { kind: true, noImageLoad: false });
  assert.deepEqual(parseArgs(["deploy", "--kind=dev"], env).target, { kind: "dev", noImageLoad: false });
  const reg = parseArgs(["deploy", "--no-image-load", "--image=r.example/weft:1"], env);
  assert.equal(reg.imagePullPolicy, "IfNotPresent");
  assert.equal(reg.target.noImageLoad, true);
  const ids = parseArgs(["deploy", "--trust-anchors=a", "--issuer-cert=b", "--issuer-key=c"], env);
  assert.deepEqual(ids.identityFiles, { anchors: "a", issuerCert: "b", issuerKey: "c" });
});

Deno.test("bad arguments are usage errors naming the flag", () => {
  const bad = (args: string[], re: RegExp) =>
    assert.throws(() => parseArgs(args, env), (e: Error) => e instanceof UsageError && re.test(e.message));
  bad(["deploy", "--trust-anchors=a"], /go together/);
  bad(["deploy", "--threshold=1d"], /unknown flag --threshold/);
  bad(["check", "--threshold=soon"], /--threshold: "soon" is not a duration/);
  bad(["deploy", "--image-pull-policy=Sometimes"], /Sometimes/);
  bad(["deploy", "--image"], /--image needs a value/);
  bad(["deploy", "extra"], /unexpected argument "extra"/);
  bad(["upgrade"], /unknown command "upgrade"/);
  assert.equal(parseArgs(["check", "--threshold=240h"], env).thresholdMs, 10 * 86_400_000);
  // Issue 21: anchors and the issuer have their own thresholds, 30 and 7 days by default.
  const check = parseArgs(["check"], env);
  assert.deepEqual([check.anchorThresholdMs, check.issuerThresholdMs], [30 * 86_400_000, 7 * 86_400_000]);
  assert.equal(parseArgs(["check", "--issuer-threshold=12h"], env).issuerThresholdMs, 12 * 3_600_000);
  bad(
    ["check", "--threshold=10d"],
    /--threshold: "10d" is not a duration \(unknown unit "d": Go durations have no days/,
  );
  assert.equal(parseArgs(["undeploy", "--keep-crds"], env).keepCrds, true);
});

Deno.test("the certs dir is per API server", () => {
  assert.equal(defaultCertsDir("https://10.10.0.1:6443", env), "/home/u/.local/state/weft/10.10.0.1_6443");
  assert.equal(defaultCertsDir("https://api.example", { XDG_STATE_HOME: "/s" }), "/s/weft/api.example_443");
});

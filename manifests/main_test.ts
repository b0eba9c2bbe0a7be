import assert from "node:assert/strict";
import { defaultCertsDir, parseArgs, readValues, UsageError } from "./main.ts";

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

Deno.test("--ha, --values and render's --nodes (issue 19); a misspelt flag gets a suggestion", async () => {
  assert.equal(parseArgs(["deploy"], env).ha, false);
  const d = parseArgs(["deploy", "--ha", "--values=v.yaml"], env);
  assert.deepEqual([d.ha, d.valuesFile], [true, "v.yaml"]);
  assert.equal(parseArgs(["render", "--ha=true", "--nodes=3"], env).nodes, 3);
  assert.equal(parseArgs(["render"], env).nodes, 1);
  const bad = (args: string[], re: RegExp) =>
    assert.throws(() => parseArgs(args, env), (e: Error) => e instanceof UsageError && re.test(e.message));
  bad(["deploy", "--nodes=3"], /unknown flag --nodes/);
  bad(["render", "--nodes=0"], /--nodes: "0" is not a whole number/);
  bad(["deploy", "--hb"], /unknown flag --hb; did you mean --ha\?/);
  bad(["deploy", "--value=x"], /unknown flag --value; did you mean --values\?/);
  bad(["deploy", "--ha=maybe"], /--ha: "maybe" is not true or false/);
  // The file is read by main: a missing one, or a bad field, is a usage error naming the file and field.
  await assert.rejects(
    readValues("/nonexistent/v.yaml"),
    (e: Error) => e instanceof UsageError && /--values=\/nonexistent\/v\.yaml/.test(e.message),
  );
  const f = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(f, "replicas: { identity: three }\n");
    await assert.rejects(
      readValues(f),
      (e: Error) =>
        e instanceof UsageError &&
        e.message === `--values=${f}: replicas.identity: "three" is not a whole number from 1 to 15`,
    );
    await Deno.writeTextFile(f, "ha: true\nreplicas: { identity: 5 }\n");
    assert.deepEqual(await readValues(f), { ha: true, replicas: { identity: 5 } });
  } finally {
    await Deno.remove(f);
  }
});

Deno.test("--multicluster-gateway-trust: off by default, a switch of deploy and render, not of undeploy (issue 23)", () => {
  assert.equal(parseArgs(["deploy"], env).multiclusterGatewayTrust, false);
  assert.equal(parseArgs(["deploy", "--multicluster-gateway-trust"], env).multiclusterGatewayTrust, true);
  assert.equal(
    parseArgs(["deploy", "--multicluster-gateway-trust=false"], env).multiclusterGatewayTrust,
    false,
  );
  assert.equal(parseArgs(["render", "--multicluster-gateway-trust"], env).multiclusterGatewayTrust, true);
  assert.throws(
    () => parseArgs(["undeploy", "--multicluster-gateway-trust"], env),
    (e: Error) => e instanceof UsageError && /unknown flag --multicluster-gateway-trust/.test(e.message),
  );
  assert.throws(
    () => parseArgs(["deploy", "--multicluster-gateway-trust=yes"], env),
    (e: Error) => e instanceof UsageError && /"yes" is not true or false/.test(e.message),
  );
});

import assert from "node:assert/strict";
import type { V1Pod } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { exec } from "../../tests/lib/exec.ts";
import { runCli } from "./cli.ts";
import { defaultInjectorConfig } from "./config.ts";
import { buildPatch } from "./patch.ts";
import { applyPatch } from "./testing/json_patch.ts";

const here = new URL(".", import.meta.url).pathname;
const data = `${here}testdata/cli`;
const update = Deno.args.includes("--update-golden");
const ARGS = [`--trust-anchors-file=${data}/ca.crt`, "--proxy-version=v0.1.0"];

async function golden(name: string, text: string): Promise<void> {
  const path = `${data}/${name}`;
  if (update) await Deno.writeTextFile(path, text);
  assert.equal(
    text,
    await Deno.readTextFile(path),
    `golden ${path} differs (run with -- --update-golden to rewrite)`,
  );
}

async function cli(args: string[]) {
  let stdout = "";
  const stderr: string[] = [];
  const code = await runCli(args, {}, {
    readInput: (p) => Deno.readTextFile(p),
    stdout: (t) => void (stdout += t),
    stderr: (l) => stderr.push(l),
  });
  return { code, stdout, stderr };
}

Deno.test("inject CLI: multi-document YAML matches its golden output, with a note for each document passed through", async () => {
  const res = await cli([`${data}/input.yaml`, ...ARGS]);
  assert.equal(res.code, 0, res.stderr.join("\n"));
  await golden("output.yaml.golden", res.stdout);
  await golden("notes.txt", res.stderr.join("\n") + "\n");
  assert.deepEqual(res.stderr, [
    "inject: document 2 (Service shop/web): passed through: kind Service has no pod template",
    "inject: document 4 (Pod shop/debug): passed through: pod has linkerd.io/inject=disabled",
    "inject: document 5 (DaemonSet monitoring/node-agent): passed through: pod uses the host network",
    "inject: document 7 item 2 (ConfigMap shop/settings): passed through: kind ConfigMap has no pod template",
    "inject: document 7 item 1 (Job shop/migrate): warning: pod of job migrate runs the proxy as a regular " +
    "container (native sidecars off): the Job completes only if the app ends it with " +
    "POST http://localhost:4191/shutdown, which is off unless the pod or namespace is annotated " +
    "config.linkerd.io/proxy-admin-shutdown=enabled (or enable native sidecars: " +
    "config.beta.linkerd.io/proxy-enable-native-sidecar=true)",
    "inject: 4 pod spec(s) injected",
  ]);
});

Deno.test("inject CLI output is the webhook's patch applied, and untouched documents are byte for byte the input", async () => {
  const input = await Deno.readTextFile(`${data}/input.yaml`);
  const res = await cli([`${data}/input.yaml`, ...ARGS]);
  const cfg = {
    ...defaultInjectorConfig(await Deno.readTextFile(`${data}/ca.crt`)),
    version: "v0.1.0",
    excludedNamespaces: [],
  };
  const before = parseAllDocuments(input).map((d) => d.toJS());
  const after = parseAllDocuments(res.stdout).map((d) => d.toJS());
  assert.equal(after.length, before.length);
  const templates: [number, string[], string][] = [
    [0, ["spec", "template"], "Deployment"],
    [2, ["spec", "jobTemplate", "spec", "template"], "CronJob"],
    [5, ["spec", "template"], "StatefulSet"],
  ];
  const at = (o: unknown, path: string[]) =>
    path.reduce((x, k) => (x as Record<string, unknown>)[k], o) as V1Pod;
  for (const [i, path, kind] of templates) {
    const t = structuredClone(at(before[i], path));
    t.metadata ??= {};
    const pod: V1Pod = {
      metadata: {
        ...t.metadata,
        namespace: before[i].metadata.namespace,
        ownerReferences: [{ apiVersion: "", kind, name: before[i].metadata.name, uid: "", controller: true }],
      },
      spec: t.spec,
    };
    const r = await buildPatch(pod, {
      metadata: { name: "shop", annotations: { "linkerd.io/inject": "enabled" } },
    }, cfg);
    assert.ok(r.ok);
    if (!r.ok) continue;
    assert.deepEqual(at(after[i], path), applyPatch(t, r.patch), `document ${i + 1} (${kind})`);
  }
  const job = after[6].items[0].spec.template.spec;
  assert.deepEqual(job.containers.map((c: { name: string }) => c.name), ["linkerd-proxy", "migrate"]);
  // The native sidecar mode is the CLI default; the Job's annotation turned it off for that pod only.
  assert.equal(after[0].spec.template.spec.initContainers[1].restartPolicy, "Always");
  // Documents passed through are the input's bytes (here: documents 2, 4 and 5).
  const inputDocs = input.split(/^---\n/m);
  for (const i of [1, 3, 4]) {
    assert.ok(
      res.stdout.includes(`---\n${inputDocs[i]}`),
      `document ${i + 1} is not passed through verbatim`,
    );
  }
  assert.ok(res.stdout.includes("- name: web # the app itself"), "comments survive injection");
});

async function run(args: string[], stdin?: string) {
  return await exec(Deno.execPath(), ["run", "-A", `${here}cli.ts`, ...args], { stdin });
}

Deno.test("inject CLI as a process: stdin to stdout, and an invalid annotation exits 1 naming it with nothing printed", async () => {
  const ok = await run(["-", ...ARGS], await Deno.readTextFile(`${data}/input.yaml`));
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, await Deno.readTextFile(`${data}/output.yaml.golden`));

  const bad = await run([`${data}/invalid.yaml`, ...ARGS]);
  assert.equal(bad.code, 1);
  assert.equal(bad.stdout, "");
  assert.match(
    bad.stderr,
    /inject: error: document 1 \(Deployment shop\/api\): annotation config\.linkerd\.io\/proxy-memory-limit="lots" is invalid: not a quantity; want a Kubernetes quantity/,
  );
  const noAnchors = await run([`${data}/input.yaml`]);
  assert.equal(noAnchors.code, 2);
  assert.match(noAnchors.stderr, /--trust-anchors-file is required/);
});

Deno.test("inject CLI: YAML syntax errors and invalid linkerd.io/inject values are errors", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.yaml`, "kind: Pod\nmetadata: {name: p\n");
    const syntax = await cli([`${dir}/a.yaml`, ...ARGS]);
    assert.equal(syntax.code, 1);
    assert.match(syntax.stderr[0], /^inject: error: document 1: YAML error: /);
    await Deno.writeTextFile(
      `${dir}/b.yaml`,
      "kind: Pod\nmetadata: {name: p, annotations: {linkerd.io/inject: 'true'}}\nspec: {containers: [{name: a}]}\n",
    );
    const typo = await cli([`${dir}/b.yaml`, ...ARGS]);
    assert.equal(typo.code, 1);
    assert.match(
      typo.stderr[0],
      /\(Pod p\): pod annotation linkerd\.io\/inject="true" is not one of enabled/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { defaultInjectorConfig } from "../control/injector/config.ts";
import { injectYaml } from "../control/injector/yaml_inject.ts";
import { buildPatch } from "../control/injector/patch.ts";
import { INJECTED_VOLUMES, uninjectText } from "./uninject.ts";

const data = new URL("../control/injector/testdata/cli/", import.meta.url).pathname;
const input = await Deno.readTextFile(`${data}input.yaml`);
const anchors = await Deno.readTextFile(`${data}ca.crt`);

function docs(text: string): unknown[] {
  return parseAllDocuments(text as string).map((d) => d.toJS());
}

async function inject(text: string, nativeSidecars: boolean): Promise<string> {
  const r = await injectYaml(text, { ...defaultInjectorConfig(anchors), nativeSidecars });
  assert.deepEqual(r.errors, []);
  assert.ok(r.injected > 0);
  return r.output;
}

for (const native of [false, true]) {
  Deno.test(`uninject: inject then uninject gives back every document of the input (native sidecars ${native})`, async () => {
    const injected = await inject(input, native);
    assert.notDeepEqual(docs(injected), docs(input));
    const r = uninjectText(injected);
    assert.deepEqual(r.errors, []);
    // Deployment, CronJob, StatefulSet and the List's Job were injected.
    assert.equal(r.uninjected, 4, r.notes.join("\n"));
    assert.deepEqual(docs(r.output), docs(input));
    // Nothing of the injector is left in the text.
    assert.doesNotMatch(
      r.output,
      /linkerd-proxy|linkerd-init|proxy-version|injected-defaults|linkerd-identity/,
    );
    // Comments of the edited documents survive.
    assert.match(r.output, /# Shop: the web front end\./);
    assert.match(r.output, /- name: web # the app itself/);
  });
}

Deno.test("uninject: documents without a proxy pass through byte for byte, each with a note", () => {
  const service =
    "apiVersion: v1\nkind: Service\nmetadata: { name: web }   # keep me\nspec: {ports: [{port: 80}]}\n";
  const pod =
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: app, image: x}]}\n";
  const r = uninjectText(service + pod);
  assert.equal(r.output, service + pod);
  assert.equal(r.uninjected, 0);
  assert.deepEqual(r.notes, [
    "document 1 (Service web): passed through: kind Service has no pod template",
    "document 2 (Pod p): passed through: no injected proxy",
  ]);
});

Deno.test("uninject: an opaque-ports annotation the user set stays; one the injector chose goes", async () => {
  const own = `apiVersion: apps/v1
kind: StatefulSet
metadata: { name: db }
spec:
  template:
    metadata:
      annotations:
        config.linkerd.io/opaque-ports: "5432"
        linkerd.io/inject: enabled
    spec:
      containers: [{ name: pg, image: postgres, ports: [{ containerPort: 5432 }] }]
`;
  const back = uninjectText(await inject(own, true));
  assert.deepEqual(docs(back.output), docs(own));
  const chosen = own.replace('        config.linkerd.io/opaque-ports: "5432"\n', "");
  const injected = await inject(chosen, true);
  assert.match(injected, /config.linkerd.io\/opaque-ports/);
  assert.deepEqual(docs(uninjectText(injected).output), docs(chosen));
});

Deno.test("uninject: JSON in, JSON out", async () => {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web", namespace: "shop", labels: { app: "web" } },
    spec: { containers: [{ name: "web", image: "web:1", ports: [{ containerPort: 8080 }] }] },
  };
  const injected = JSON.stringify(docs(await inject(JSON.stringify(pod), false))[0]);
  const r = uninjectText(injected);
  assert.equal(r.uninjected, 1);
  assert.deepEqual(JSON.parse(r.output), pod);
});

Deno.test("uninject: invalid YAML is an error naming the document, and nothing is printed", () => {
  const r = uninjectText("kind: Pod\n---\nmetadata: [unclosed\n");
  assert.equal(r.output, "");
  assert.equal(r.errors.length, 1);
  assert.match(r.errors[0], /^document 2: YAML error/);
});

Deno.test("uninject: removes exactly the volumes the injector's patch adds", async () => {
  const r = await buildPatch(
    { metadata: { name: "p", namespace: "shop" }, spec: { containers: [{ name: "app", image: "x" }] } },
    undefined,
    defaultInjectorConfig(anchors),
  );
  assert.ok(r.ok);
  const added = r.patch.filter((op) => op.path === "/spec/volumes/-").map((op) =>
    (op.value as { name: string }).name
  );
  assert.deepEqual([...added].sort(), [...INJECTED_VOLUMES].sort());
});

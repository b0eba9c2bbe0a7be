/**
 * The destination, the policy controller and the injector read the same port list annotations;
 * this table checks they agree on what each value means. Destination and policy (as Linkerd's)
 * ignore a bad entry and keep the value's good ones. On the pod's own annotation the injector
 * refuses the pod, naming every bad entry and the annotation, so it never writes a list that
 * silently lost an entry; on the namespace's (which serves every pod there) it warns and keeps the
 * good entries, and a name the pod lacks lists nothing, as destination and policy read it.
 */
import assert from "node:assert/strict";
import type { V1Pod } from "@kubernetes/client-node";
import { Annotations } from "../proto/annotations.ts";
import { ProxyEnv } from "../proto/env.ts";
import { parsePortRanges, portInRanges } from "../proto/port_list.ts";
import { defaultConfig } from "./destination/config.ts";
import type { Pod as DestinationPod } from "./destination/k8s_types.ts";
import { isOpaqueByAnnotation, isSkipInbound } from "./destination/workload.ts";
import { defaultInjectorConfig } from "./injector/config.ts";
import { buildPatch } from "./injector/patch.ts";
import { applyPatch } from "./injector/testing/json_patch.ts";
import { defaultPolicyConfig } from "./policy/config.ts";
import { defaultServer } from "./policy/inbound_index.ts";
import type { Pod as PolicyPod } from "./policy/resources.ts";
import { PolicyStore } from "./policy/store.ts";
import { storeWith } from "./policy/testing.ts";

const PROBES = [25, 3306, 4000, 4050, 4100, 6379, 8080, 9000];

/** [annotation value, the probe ports it lists, its bad entries (a name the pod lacks counts on the pod only)]. */
const TABLE: [string, number[], string[]][] = [
  ["mysql", [3306], []],
  ["3306", [3306], []],
  ["4000-4100", [4000, 4050, 4100], []],
  [" 25 , 4000-4100 ", [25, 4000, 4050, 4100], []],
  ["mysql,http", [3306, 8080], []],
  ["25,,8080,", [25, 8080], []],
  ["", [], []],
  ["25,junk!", [25], ["junk!"]],
  ["70000,8080", [8080], ["70000"]],
  ["0", [], ["0"]],
  ["4100-4000,25", [25], ["4100-4000"]],
  ["1-70000,6379", [6379], ["1-70000"]],
  ["redis,3306", [3306], ["redis"]],
  ["My SQL,mysql", [3306], ["My SQL"]],
];

function pod(annotations: Record<string, string>): V1Pod {
  return {
    metadata: {
      name: "db-0",
      namespace: "shop",
      annotations: { "linkerd.io/inject": "enabled", ...annotations },
    },
    spec: {
      containers: [{
        name: "db",
        image: "db",
        ports: [{ name: "mysql", containerPort: 3306 }, { name: "http", containerPort: 8080 }],
      }],
    },
  };
}

const destinationConfig = defaultConfig();
const policyConfig = defaultPolicyConfig();
const injectorConfig = defaultInjectorConfig(
  "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
);
const store = new PolicyStore();

type Injected =
  | { ok: true; ports: number[]; initIgnored: number[]; warnings: string[] }
  | { ok: false; message: string };

async function injector(p: V1Pod, nsAnnotations: Record<string, string> = {}): Promise<Injected> {
  const res = await buildPatch(p, { metadata: { name: "shop", annotations: nsAnnotations } }, injectorConfig);
  if (!res.ok) return { ok: false, message: res.problems.map((x) => x.message).join("; ") };
  const out = applyPatch(p, res.patch);
  const containers = [...(out.spec?.initContainers ?? []), ...(out.spec?.containers ?? [])];
  const proxy = containers.find((c) => c.name === "linkerd-proxy");
  const init = containers.find((c) => c.name === "linkerd-init");
  const env = proxy?.env?.find((e) => e.name === ProxyEnv.inboundPortsDisableProtocolDetection)?.value;
  assert.ok(env !== undefined && init?.args, "the patch has the proxy's env and init's args");
  // Read back with the numeric grammar the proxy and init use.
  const opaque = parsePortRanges(env, ProxyEnv.inboundPortsDisableProtocolDetection);
  const args = init.args;
  const ignored = parsePortRanges(args[args.indexOf("--inbound-ports-to-ignore") + 1], "init");
  return {
    ok: true,
    ports: PROBES.filter((p) => portInRanges(p, opaque)),
    initIgnored: PROBES.filter((p) => portInRanges(p, ignored)),
    warnings: res.warnings,
  };
}

for (const [value, want, bad] of TABLE) {
  Deno.test(`opaque-ports ${JSON.stringify(value)}: destination, policy and injector agree`, async () => {
    const p = pod({ [Annotations.opaquePorts]: value });
    const destination = PROBES.filter((port) =>
      isOpaqueByAnnotation(p as DestinationPod, port, undefined, destinationConfig)
    );
    const policy = PROBES.filter((port) =>
      defaultServer(store, p as PolicyPod, port, policyConfig).protocol?.kind?.$case === "opaque"
    );
    assert.deepEqual(destination, want, "destination");
    assert.deepEqual(policy, want, "policy");
    const inj = await injector(p);
    if (bad.length === 0) {
      assert.ok(inj.ok, inj.ok ? "" : inj.message);
      assert.deepEqual(inj.ok && inj.ports, want, "injector");
    } else {
      assert.ok(!inj.ok, "the injector refuses a pod whose annotation has a bad entry");
      assert.ok(!inj.ok && inj.message.includes(Annotations.opaquePorts), inj.ok ? "" : inj.message);
      for (const entry of bad) assert.ok(!inj.ok && inj.message.includes(`"${entry}"`), `names "${entry}"`);
    }
  });

  Deno.test(`opaque-ports ${JSON.stringify(value)} on the namespace: destination, policy and injector agree`, async () => {
    const annotations = { [Annotations.opaquePorts]: value };
    const namespace = { metadata: { name: "shop", annotations } };
    const p = pod({});
    const nsStore = storeWith(["Namespace", namespace]);
    const destination = PROBES.filter((port) =>
      isOpaqueByAnnotation(p as DestinationPod, port, namespace, destinationConfig)
    );
    const policy = PROBES.filter((port) =>
      defaultServer(nsStore, p as PolicyPod, port, policyConfig).protocol?.kind?.$case === "opaque"
    );
    assert.deepEqual(destination, want, "destination");
    assert.deepEqual(policy, want, "policy");
    const inj = await injector(p, annotations);
    assert.ok(inj.ok, "a namespace's value never refuses the pod");
    assert.deepEqual(inj.ok && inj.ports, want, "injector");
    const syntax = bad.filter((entry) => entry !== "redis"); // the one name the pod lacks
    for (const entry of syntax) {
      assert.ok(inj.ok && inj.warnings.some((w) => w.includes(`"${entry}"`)), `warns about "${entry}"`);
    }
    if (syntax.length === 0) assert.deepEqual(inj.ok && inj.warnings, []);
  });

  Deno.test(`skip-inbound-ports ${JSON.stringify(value)}: destination and injector agree`, async () => {
    const p = pod({ [Annotations.skipInboundPorts]: value });
    const destination = PROBES.filter((port) => isSkipInbound(p as DestinationPod, port));
    assert.deepEqual(destination, want, "destination");
    const inj = await injector(p);
    if (bad.length === 0) {
      assert.deepEqual(inj.ok && inj.initIgnored, want, "injector (init's ports to ignore)");
    } else {
      assert.ok(!inj.ok && inj.message.includes(Annotations.skipInboundPorts));
      for (const entry of bad) assert.ok(!inj.ok && inj.message.includes(`"${entry}"`), `names "${entry}"`);
    }
  });
}

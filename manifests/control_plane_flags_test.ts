/**
 * The control-plane manifests start each controller with flags; a flag its parser refuses would
 * stop the pod at startup. This reads every `weft-control <component> ...` command in the manifests
 * and runs it through that component's own flag parser.
 */
import assert from "node:assert/strict";
import type { V1Container } from "@kubernetes/client-node";
import { parseDestinationArgs } from "../control/destination/main.ts";
import { parseIdentityConfig } from "../control/identity/config.ts";
import { parseInjectorArgs } from "../control/injector/flags.ts";
import { parseArgs as parsePolicyArgs } from "../control/policy/main.ts";
import { parseArgs as parseValidatorArgs } from "../control/validator/main.ts";
import { parseArgs as parseTapArgs } from "../control/tap/main.ts";
import { parseArgs as parseDashboardArgs } from "../control/dashboard/main.ts";
import { CONTROL_PLANE_DIR } from "./deploy.ts";
import { loadDir, NAMESPACE, TRUST_DOMAIN } from "./render.ts";

/** What each component's parser makes of the args: [control-plane namespace, trust domain] where it has them. */
const PARSERS: Record<string, (args: string[]) => [string?, string?]> = {
  destination: (a) => {
    const c = parseDestinationArgs(a, {});
    return [c.controlPlaneNamespace, c.trustDomain];
  },
  policy: (a) => {
    const c = parsePolicyArgs(a, undefined).policy;
    return [c.controlPlaneNamespace, c.identityTrustDomain];
  },
  identity: (a) => {
    const c = parseIdentityConfig(a, {});
    return [c.controlPlaneNamespace, c.trustDomain];
  },
  injector: (a) => {
    const c = parseInjectorArgs(a, {}).base;
    return [c.controlPlaneNamespace, c.trustDomain];
  },
  validator: (a) => {
    parseValidatorArgs(a, {});
    return [];
  },
  tap: (a) => [parseTapArgs(a, {}).controlPlaneNamespace],
  dashboard: (a) => {
    parseDashboardArgs(a, {});
    return [];
  },
};

Deno.test("every controller's command in the manifests parses with its component's flags", async () => {
  const seen = new Set<string>();
  for (const m of await loadDir(CONTROL_PLANE_DIR)) {
    if (m.kind !== "Deployment") continue;
    const spec = (m.spec as { template: { spec: { containers: V1Container[] } } }).template.spec;
    for (const c of spec.containers) {
      const words = [...(c.command ?? []), ...(c.args ?? [])];
      if (words[0] !== "weft-control") continue;
      const [, component, ...args] = words;
      const parse = PARSERS[component];
      assert.ok(parse, `${m.metadata.name}/${c.name}: unknown component ${component}`);
      const [ns, td] = parse(args);
      if (ns !== undefined) assert.equal(ns, NAMESPACE, `${component}: control-plane namespace`);
      if (td !== undefined) assert.equal(td, TRUST_DOMAIN, `${component}: trust domain`);
      seen.add(component);
    }
  }
  assert.deepEqual(
    [...seen].sort(),
    Object.keys(PARSERS).sort(),
    "every component is started by the manifests",
  );
});

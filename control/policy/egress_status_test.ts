import { assertEquals } from "./assert.ts";
import { defaultPolicyConfig } from "./config.ts";
import { EgressStatusWriter } from "./egress_status.ts";
import type { Kind } from "./resources.ts";
import { meta, storeWith } from "./testing.ts";

const cfg = defaultPolicyConfig({ clusterNetworks: ["10.0.0.0/8"] });
const NOW = new Date("2026-12-04T05:00:00Z");

function writerFor(...ens: { name: string; spec: unknown; status?: unknown }[]) {
  const store = storeWith(
    ...ens.map((e) =>
      ["EgressNetwork", { metadata: meta("linkerd-egress", e.name), spec: e.spec, status: e.status }] as [
        Kind,
        never,
      ]
    ),
  );
  const patches: { name: string; status: unknown }[] = [];
  const w = new EgressStatusWriter(store, cfg, {
    patchStatus: (kind, _ns, name, status) => {
      assertEquals(kind, "EgressNetwork");
      patches.push({ name, status });
      return Promise.resolve();
    },
  }, { delayMs: 1_000_000, now: () => NOW });
  return { w, patches };
}

Deno.test("egress status: Accepted, or not when a network overlaps the cluster networks", async () => {
  const { w, patches } = writerFor(
    { name: "all", spec: { trafficPolicy: "Allow" } },
    { name: "clash", spec: { trafficPolicy: "Deny", networks: [{ cidr: "10.1.0.0/16" }] } },
    {
      name: "wide",
      spec: { trafficPolicy: "Deny", networks: [{ cidr: "0.0.0.0/0", except: ["10.0.0.0/8"] }] },
    },
  );
  for (const n of ["all", "clash", "wide"]) await w.sync(`linkerd-egress/${n}`);
  w.close();
  const t = "2026-12-04T05:00:00Z";
  assertEquals(patches, [
    {
      name: "all",
      status: {
        conditions: [{
          type: "Accepted",
          status: "True",
          reason: "Accepted",
          message: "",
          lastTransitionTime: t,
        }],
      },
    },
    {
      name: "clash",
      status: {
        conditions: [{
          type: "Accepted",
          status: "False",
          reason: "EgressReasonNetworkOverlap",
          message: "networks overlap with clusterNetworks",
          lastTransitionTime: t,
        }],
      },
    },
    // The overlap of 0.0.0.0/0 with the cluster network is excepted.
    {
      name: "wide",
      status: {
        conditions: [{
          type: "Accepted",
          status: "True",
          reason: "Accepted",
          message: "",
          lastTransitionTime: t,
        }],
      },
    },
  ]);
});

Deno.test("egress status: an unchanged condition is not patched; other conditions are kept", async () => {
  const old = {
    type: "Accepted",
    status: "True",
    reason: "Accepted",
    message: "",
    lastTransitionTime: "2026-01-01T00:00:00Z",
  };
  const other = {
    type: "Other",
    status: "True",
    reason: "X",
    message: "",
    lastTransitionTime: "2026-01-01T00:00:00Z",
  };
  const same = writerFor({
    name: "all",
    spec: { trafficPolicy: "Allow" },
    status: { conditions: [other, old] },
  });
  await same.w.sync("linkerd-egress/all");
  same.w.close();
  assertEquals(same.patches, []);
  const changed = writerFor({
    name: "all",
    spec: { trafficPolicy: "Allow", networks: [{ cidr: "10.0.0.0/24" }] },
    status: { conditions: [other, old] },
  });
  await changed.w.sync("linkerd-egress/all");
  changed.w.close();
  const conds = (changed.patches[0].status as { conditions: { type: string; status: string }[] }).conditions;
  assertEquals(conds.map((c) => [c.type, c.status]), [["Other", "True"], ["Accepted", "False"]]);
});

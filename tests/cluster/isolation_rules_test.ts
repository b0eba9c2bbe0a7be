// The host's FORWARD isolation rules of both local clusters (pure; the cluster tests check what is installed).

import assert from "node:assert/strict";
import { clusterConfig } from "./config.ts";
import { isolationRules } from "./host.ts";

const west = clusterConfig("west");
const east = clusterConfig("east");
const text = (rules: string[][]) => rules.map((r) => r.join(" "));

Deno.test("west's chain passes east's pods and node address over east's link only, then drops", () => {
  assert.deepEqual(text(isolationRules(west, east)), [
    "-s 10.244.0.0/16 -d 10.244.0.0/16 -j RETURN",
    "-s 10.244.0.0/16 -d 10.96.0.0/12 -j RETURN",
    "-s 10.244.0.0/16 -d 10.245.0.0/16 -o weft-east -j RETURN",
    "-s 10.244.0.0/16 -d 10.20.0.2/32 -o weft-east -j RETURN",
    "-s 10.245.0.0/16 -d 10.244.0.0/16 -i weft-east -j RETURN",
    "-s 10.20.0.2/32 -d 10.244.0.0/16 -i weft-east -j RETURN",
    "-s 10.244.0.0/16 -j DROP",
    "-d 10.244.0.0/16 -j DROP",
    "-i weft-w+ -j DROP",
    "-o weft-w+ -j DROP",
  ]);
});

Deno.test("east's chain passes only traffic between the clusters' pods (and east's node) over its link", () => {
  const rules = isolationRules(east, west);
  const returns = rules.filter((r) => r.at(-1) === "RETURN");
  for (const r of returns) {
    const arg = (f: string) => r[r.indexOf(f) + 1];
    // Every allowed packet crosses east's link one way and west's bridge or a west worker link the other.
    assert.ok([arg("-i"), arg("-o")].includes("weft-east"), r.join(" "));
    assert.ok([arg("-i"), arg("-o")].some((l) => l === "weft0" || l === "weft-w+"), r.join(" "));
    const ends = [arg("-s"), arg("-d")].sort();
    assert.ok(ends.includes("10.244.0.0/16"), r.join(" "));
    assert.ok(ends.includes("10.245.0.0/16") || ends.includes("10.20.0.2/32"), r.join(" "));
  }
  assert.equal(returns.length, 8);
  assert.deepEqual(text(rules.slice(returns.length)), [
    "-i weft-east -j DROP",
    "-o weft-east -j DROP",
    "-s 10.245.0.0/16 -j DROP",
    "-d 10.245.0.0/16 -j DROP",
  ]);
});

Deno.test("the two clusters share no range, address, directory or host name", () => {
  assert.notEqual(west.podCidr, east.podCidr);
  assert.notEqual(west.serviceCidr, east.serviceCidr);
  assert.notEqual(west.apiUrl, east.apiUrl);
  assert.notEqual(west.nodeName, east.nodeName);
  assert.notEqual(west.isolationChain, east.isolationChain);
  for (const k of ["stateDir", "runDir", "logDir"] as const) {
    // `down` matches its own paths with a trailing slash: neither may contain the other's.
    assert.ok(!east[k].startsWith(west[k] + "/") && !west[k].startsWith(east[k] + "/"), k);
  }
  assert.equal(east.adminKubeconfig, "/var/lib/weft-cluster-east/admin.kubeconfig");
});

import assert from "node:assert/strict";
import { toIpNetwork } from "../../proto/ip.ts";
import { networkContains } from "./network_cidr.ts";

const n = toIpNetwork;

Deno.test("networkContains: a narrower IPv4 network inside a wider one", () => {
  assert.equal(networkContains(n("10.0.0.0/8"), n("10.1.0.0/16")), true);
  assert.equal(networkContains(n("10.1.0.0/16"), n("10.0.0.0/8")), false);
  assert.equal(networkContains(n("10.0.0.0/8"), n("11.0.0.0/16")), false);
});

Deno.test("networkContains: equal networks contain each other; /0 contains every address", () => {
  assert.equal(networkContains(n("10.0.0.0/8"), n("10.0.0.0/8")), true);
  assert.equal(networkContains(n("0.0.0.0/0"), n("255.255.255.255/32")), true);
});

Deno.test("networkContains: IPv6, and no mixing of families", () => {
  assert.equal(networkContains(n("fd00::/8"), n("fd12:3456::/32")), true);
  assert.equal(networkContains(n("fd00::/8"), n("fe80::/10")), false);
  assert.equal(networkContains(n("::/0"), n("10.0.0.0/8")), false);
  assert.equal(networkContains(n("0.0.0.0/0"), n("::/0")), false);
});

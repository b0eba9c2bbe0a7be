import assert from "node:assert/strict";
import { toIpNetwork } from "../../proto/ip.ts";
import { networks } from "./authz.ts";
import { networkContains, parseNetwork } from "./network_cidr.ts";

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

Deno.test("parseNetwork: a bare address is one host, a CIDR keeps its prefix", () => {
  assert.deepEqual(parseNetwork("10.1.2.3"), n("10.1.2.3/32"));
  assert.deepEqual(parseNetwork("fd00::1"), n("fd00::1/128"));
  assert.deepEqual(parseNetwork("10.0.0.0/8"), n("10.0.0.0/8"));
  assert.throws(() => parseNetwork("10.1.2"), /not an IPv4 address/);
  assert.throws(() => parseNetwork("10.0.0.0/40"), /prefix length "40"/);
});

Deno.test("authz networks(): bare addresses in a resource become host networks for the proxy", () => {
  assert.deepEqual(networks([{ cidr: "10.0.0.0/8", except: ["10.1.2.3"] }, { cidr: "fd00::1" }]), [
    { net: n("10.0.0.0/8"), except: [n("10.1.2.3/32")] },
    { net: n("fd00::1/128"), except: [] },
  ]);
});

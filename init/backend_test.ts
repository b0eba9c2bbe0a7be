import assert from "node:assert/strict";
import { chooseBackend, hasNetAdmin, InitError } from "./backend.ts";
import { defaultGateway } from "./verify.ts";

Deno.test("init backend: auto picks the backend holding rules, else nft", () => {
  const rules = "*nat\n-A PREROUTING -j KUBE-SERVICES\n-A OUTPUT -j KUBE-SERVICES\nCOMMIT\n";
  assert.equal(chooseBackend("*nat\nCOMMIT\n", rules), "legacy");
  assert.equal(chooseBackend(rules, "*nat\nCOMMIT\n"), "nft");
  assert.equal(chooseBackend("", ""), "nft");
  assert.equal(chooseBackend(undefined, ""), "legacy");
  assert.equal(chooseBackend("", undefined), "nft");
  assert.throws(
    () => chooseBackend(undefined, undefined),
    (e: Error) => e instanceof InitError && /install iptables/.test(e.message),
  );
});

Deno.test("init backend: NET_ADMIN is bit 12 of CapEff", () => {
  assert.equal(hasNetAdmin("Name:\tx\nCapEff:\t000001ffffffffff\n"), true);
  assert.equal(hasNetAdmin("CapEff:\t0000000000001000\n"), true);
  assert.equal(hasNetAdmin("CapEff:\t0000000000000fff\n"), false);
  assert.equal(hasNetAdmin("no caps line"), false);
});

Deno.test("init verify: default gateway from /proc/net/route", () => {
  const route = "Iface\tDestination\tGateway \tFlags\n" +
    "eth0\t0000A8C0\t00000000\t0001\n" +
    "eth0\t00000000\t0100A8C0\t0003\n";
  assert.equal(defaultGateway(route), "192.168.0.1");
  assert.equal(defaultGateway("Iface\tDestination\tGateway\n"), undefined);
});

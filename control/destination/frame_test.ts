import assert from "node:assert/strict";
import { Update, WeightedAddr } from "../../proto/gen/destination.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { encodeAdd } from "./frame.ts";
import { parseContextToken, parseTarget } from "./path.ts";

Deno.test("encodeAdd from pre-encoded addresses decodes as the same Update, zone_locality per address", () => {
  const localities = ["local", "remote", "unknown"] as const;
  const plain: WeightedAddr[] = Array.from({ length: 40 }, (_, i) => ({
    addr: toTcpAddress(`10.0.${i}.1`, 8080),
    weight: 10000,
    metricLabels: { pod: `p-${"x".repeat(i * 5)}`, zone: "z1" },
    tlsIdentity: {
      strategy: {
        $case: "dnsLikeIdentity",
        value: { name: `sa${i}.ns.serviceaccount.identity.l.cluster.local` },
      },
      serverName: { name: `sa${i}.ns.serviceaccount.identity.l.cluster.local` },
    },
  }));
  const bytes = encodeAdd(
    plain.map((a, i) => ({ base: WeightedAddr.encode(a).finish(), locality: localities[i % 3] })),
    { service: "s", namespace: "n" },
  );
  // The label goes after the address's other fields on the wire; decoded, it is one more label.
  const addrs = plain.map((a, i) => ({
    ...a,
    metricLabels: { ...a.metricLabels, zone_locality: localities[i % 3] },
  }));
  const expected: Update = {
    update: { $case: "add", value: { addrs, metricLabels: { service: "s", namespace: "n" } } },
  };
  assert.deepEqual(Update.decode(bytes), Update.decode(Update.encode(expected).finish()));
  const decoded = Update.decode(bytes);
  assert.equal(decoded.update?.$case === "add" && decoded.update.value.addrs.length, 40);
});

Deno.test("parseTarget: service, hostname, default port, IPs; context tokens", () => {
  assert.deepEqual(parseTarget("web.ns.svc.cluster.local", "cluster.local"), {
    kind: "service",
    service: "web",
    namespace: "ns",
    port: 80,
  });
  assert.deepEqual(parseTarget("web-0.web.ns.svc.cluster.local.:8080", "cluster.local"), {
    kind: "service",
    hostname: "web-0",
    service: "web",
    namespace: "ns",
    port: 8080,
  });
  assert.deepEqual(parseTarget("10.1.2.3:53", "cluster.local"), { kind: "ip", ip: "10.1.2.3", port: 53 });
  assert.deepEqual(parseTarget("[fd00::1]:80", "cluster.local"), { kind: "ip", ip: "fd00::1", port: 80 });
  assert.throws(() => parseTarget("web.ns:80", "cluster.local"), /Invalid authority "web.ns:80"/);
  assert.throws(() => parseTarget("a.b.c.web.ns.svc.cluster.local", "cluster.local"), /Invalid authority/);
  assert.throws(() => parseTarget("web.ns.svc.cluster.local:0", "cluster.local"), /Invalid port/);
  assert.deepEqual(parseContextToken('{"ns":"a","nodeName":"n","pod":"p"}'), {
    ns: "a",
    nodeName: "n",
    pod: "p",
  });
  assert.deepEqual(parseContextToken("ns:legacy"), { ns: "legacy" });
  assert.deepEqual(parseContextToken("{not json"), {});
});

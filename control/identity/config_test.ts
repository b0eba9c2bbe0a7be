import assert from "node:assert/strict";
import { parseIdentityConfig } from "./config.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";

Deno.test("identity config defaults follow Linkerd's chart in the weft namespace", () => {
  const c = parseIdentityConfig([], {});
  assert.equal(c.grpcAddress, "0.0.0.0:8080");
  assert.equal(c.adminPort, 9990);
  assert.equal(c.lifetimeMs, 86_400_000);
  assert.equal(c.clockSkewMs, 20_000);
  assert.deepEqual(c.issuerSecret, { namespace: "weft", name: "linkerd-identity-issuer" });
  assert.deepEqual(c.trustAnchorsConfigMap, {
    namespace: "weft",
    name: "linkerd-identity-trust-roots",
    key: "ca-bundle.crt",
  });
  assert.deepEqual(c.tokenAudiences, ["identity.l5d.io"]);
  assert.equal(c.tokenReview.maxQueuedPerClient, 200);
});

Deno.test("identity flags override, and bad values are named", () => {
  const c = parseIdentityConfig(
    [
      "--controller-namespace=mesh",
      "--issuance-lifetime=24h0m0s",
      "--clock-skew-allowance=10s",
      "--token-audience=a",
      "--token-audience=b",
    ],
    { KUBECONFIG: "/tmp/kc" },
  );
  assert.equal(c.issuerSecret.namespace, "mesh");
  assert.equal(c.lifetimeMs, 86_400_000);
  assert.deepEqual(c.tokenAudiences, ["a", "b"]);
  assert.equal(c.kubeconfig, "/tmp/kc");
  assert.throws(
    () => parseIdentityConfig(["--issuance-lifetime=forever"], {}),
    /--issuance-lifetime: "forever" is not a duration/,
  );
  assert.throws(() => parseIdentityConfig(["--bogus=1"], {}), /unknown flag --bogus/);
  assert.throws(
    () => parseIdentityConfig(["--addr=::1:8080"], {}),
    /--addr: "::1:8080" is not host:port \(an IPv6 host needs brackets/,
  );
  // Linkerd's spellings and the older weft ones name the same flags.
  const l = parseIdentityConfig(
    [
      "--identity-trust-domain=td.example",
      "--identity-issuance-lifetime=48h",
      "--identity-clock-skew-allowance=5s",
    ],
    {},
  );
  assert.deepEqual([l.trustDomain, l.lifetimeMs, l.clockSkewMs], ["td.example", 172_800_000, 5000]);
  assert.equal(parseIdentityConfig(["--trust-domain=old.example"], {}).trustDomain, "old.example");
  assert.throws(
    () => parseIdentityConfig(["--issuer-secret=nope"], {}),
    /--issuer-secret: "nope" is not namespace\/name/,
  );
  assert.equal(parseDurationMs("1h30m", "x"), 5_400_000);
  assert.equal(parseDurationMs("500ms", "x"), 500);
});

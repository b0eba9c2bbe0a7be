import assert from "node:assert/strict";
import { parseServerVersion, supportsNativeSidecars } from "./native_sidecar.ts";

Deno.test("native sidecars from Kubernetes 1.29, reading provider-style versions", () => {
  const table: [Record<string, string>, boolean][] = [
    [{ major: "1", minor: "28", gitVersion: "v1.28.9" }, false],
    [{ major: "1", minor: "29", gitVersion: "v1.29.0" }, true],
    [{ major: "1", minor: "34", gitVersion: "v1.34.4" }, true],
    [{ major: "1", minor: "27+", gitVersion: "v1.27.16-eks-a18cd3a" }, false],
    [{ major: "1", minor: "30+", gitVersion: "v1.30.5-gke.1014001" }, true],
    [{ major: "", minor: "", gitVersion: "v1.31.2+k3s1" }, true],
    [{ major: "2", minor: "0" }, true],
  ];
  for (const [v, want] of table) assert.equal(supportsNativeSidecars(v), want, JSON.stringify(v));
  assert.throws(
    () => parseServerVersion({ gitVersion: "devel" }),
    /cannot read a version from the API server/,
  );
});

/**
 * Keeps heavy npm packages out of the proxy's module graph: each one costs every meshed pod
 * megabytes of memory (docs/proxy_memory.md, "Module graph"). The list is per package name;
 * anything that depends on a listed package is caught too.
 */
import assert from "node:assert/strict";

/** npm packages the proxy must not load, with why. */
const FORBIDDEN_NPM_PACKAGES: Record<string, string> = {
  "@peculiar/x509": "5–6 MiB with its ASN.1 stack; the proxy has its own DER reader (identity/cert_parse.ts)",
  "tsyringe": "dependency injection for @peculiar/x509, needs reflect-metadata",
  "asn1js": "the ASN.1 library under @peculiar/x509",
  "prom-client": "~3.5 MiB; the proxy has its own registry and exposition (metrics/registry.ts)",
  "@grpc/grpc-js":
    "5–7 MiB with node:http2 and the generated clients; control-plane gRPC runs on the proxy's own HTTP/2 client (grpc/)",
};

interface DenoInfo {
  modules: {
    kind: string;
    specifier: string;
    npmPackage?: string;
    dependencies?: { code?: { specifier: string } }[];
  }[];
  npmPackages: Record<string, { name: string; dependencies: string[] }>;
}

/** Every npm package the graph loads, direct or transitive: name → the chain that pulls it in. */
function npmPackagesOf(info: DenoInfo, root: string): Map<string, string> {
  // `npm:@scope/name@1.2.3` (as imported) and `npm:/@scope/name@1.2.3` (as listed) → `@scope/name@1.2.3`.
  const bare = (s: string) => s.replace(/^npm:\/?/, "");
  const importer = new Map<string, string>();
  for (const m of info.modules) {
    for (const d of m.dependencies ?? []) {
      if (d.code?.specifier.startsWith("npm:")) {
        importer.set(bare(d.code.specifier), m.specifier.replace(root, ""));
      }
    }
  }
  const found = new Map<string, string>();
  const visit = (id: string, via: string) => {
    const pkg = info.npmPackages[id];
    if (!pkg || found.has(pkg.name)) return;
    found.set(pkg.name, via);
    for (const dep of pkg.dependencies) visit(dep, `${via} → ${pkg.name}`);
  };
  for (const m of info.modules) {
    if (m.kind === "npm" && m.npmPackage) visit(m.npmPackage, importer.get(bare(m.specifier)) ?? m.specifier);
  }
  return found;
}

Deno.test("the proxy's module graph loads none of the forbidden npm packages", async () => {
  const main = new URL("./main.ts", import.meta.url);
  const root = new URL("../", import.meta.url).href;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", main.pathname],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, `deno info failed: ${new TextDecoder().decode(out.stderr)}`);
  const loaded = npmPackagesOf(JSON.parse(new TextDecoder().decode(out.stdout)), root);
  // The walk sees the graph's npm packages at all (so an empty result cannot pass silently).
  assert.ok(loaded.has("@bufbuild/protobuf"), `npm packages found: ${[...loaded.keys()].join(", ")}`);
  const bad = Object.keys(FORBIDDEN_NPM_PACKAGES).filter((name) => loaded.has(name));
  assert.deepEqual(
    bad.map((name) => `${name} (via ${loaded.get(name)}): ${FORBIDDEN_NPM_PACKAGES[name]}`),
    [],
    "forbidden npm packages in proxy/main.ts's module graph",
  );
});

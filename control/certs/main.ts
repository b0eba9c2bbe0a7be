/**
 * `deno task certs [create|check] [flags]`: the mesh's certificate tooling.
 *
 *   create  (default) a trust anchor and an issuer signed by it, or only a new issuer for an
 *           existing anchor (`--anchor-cert/--anchor-key`, for issuer rotation); writes PEM
 *           files and prints their expiry.
 *   check   prints when the anchors and the issuer expire; exits 1 when one expires within
 *           `--threshold` (default 1440h = 60 days, as `linkerd check` warns) or is invalid.
 */
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../../proto/control_plane.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";
import { flag, FlagError, type Flags, parseFlags } from "../flags/flags.ts";
import { TrustAnchors } from "../identity/issuer.ts";
import { checkExpiry } from "./expiry_check.ts";
import { type CaMaterial, createIssuer, createTrustAnchor } from "./pki.ts";

const USAGE = `usage:
  deno task certs create [--out=./weft-certs] [--controller-namespace=linkerd] [--identity-trust-domain=cluster.local]
                         [--anchor-lifetime=87600h] [--issuer-lifetime=8760h]
                         [--anchor-cert=PATH --anchor-key=PATH]   (new issuer for an existing anchor)
    writes ca.crt, ca.key (only for a new anchor), issuer.crt, issuer.key
  deno task certs check --anchors=PATH [--issuer=PATH [--issuer-key=PATH]] [--threshold=1440h]`;

class UsageError extends Error {}

function flagsOf(args: string[], names: string[]): Flags {
  try {
    return parseFlags(args, names.map((n) => flag(n))).flags;
  } catch (e) {
    throw e instanceof FlagError ? new UsageError(e.message) : e;
  }
}

async function writeFile(path: string, text: string, mode: number): Promise<void> {
  await Deno.writeTextFile(path, text, { mode });
  await Deno.chmod(path, mode);
}

function expiry(role: string, m: CaMaterial): string {
  return `${role}: "${m.cert.subject}" valid until ${m.cert.notAfter.toISOString()}`;
}

async function create(args: string[], out: (line: string) => void): Promise<number> {
  const f = flagsOf(args, [
    "out",
    "controller-namespace",
    "identity-trust-domain",
    "anchor-lifetime",
    "issuer-lifetime",
    "anchor-cert",
    "anchor-key",
  ]);
  const dir = f.get("out") ?? "./weft-certs";
  const ns = f.get("controller-namespace") ?? DEFAULT_CONTROL_PLANE_NAMESPACE;
  const td = f.get("identity-trust-domain") ?? "cluster.local";
  const now = Date.now();
  const anchorLifetime = parseDurationMs(f.get("anchor-lifetime") ?? "87600h", "--anchor-lifetime");
  const issuerLifetime = parseDurationMs(f.get("issuer-lifetime") ?? "8760h", "--issuer-lifetime");
  await Deno.mkdir(dir, { recursive: true });
  let anchor: { certPem: string; keyPem: string };
  if (f.has("anchor-cert") || f.has("anchor-key")) {
    if (!f.has("anchor-cert") || !f.has("anchor-key")) {
      throw new UsageError("--anchor-cert and --anchor-key go together");
    }
    anchor = {
      certPem: await Deno.readTextFile(f.get("anchor-cert")!),
      keyPem: await Deno.readTextFile(f.get("anchor-key")!),
    };
    out(`using the existing trust anchor ${f.get("anchor-cert")}`);
  } else {
    const root = await createTrustAnchor({ commonName: `root.${ns}.${td}`, lifetimeMs: anchorLifetime, now });
    await writeFile(`${dir}/ca.crt`, root.certPem, 0o644);
    await writeFile(`${dir}/ca.key`, root.keyPem, 0o600);
    out(expiry(`trust anchor ${dir}/ca.crt`, root));
    anchor = root;
  }
  const issuer = await createIssuer(anchor, {
    commonName: `identity.${ns}.${td}`,
    lifetimeMs: issuerLifetime,
    now,
    skewMs: 60_000,
  });
  await writeFile(`${dir}/issuer.crt`, issuer.certPem, 0o644);
  await writeFile(`${dir}/issuer.key`, issuer.keyPem, 0o600);
  out(expiry(`issuer ${dir}/issuer.crt`, issuer));
  if (issuer.cert.notAfter.getTime() < now + issuerLifetime - 1000) {
    out(`note: the issuer's lifetime was cut to the trust anchor's expiry`);
  }
  return 0;
}

async function check(args: string[], out: (line: string) => void): Promise<number> {
  const f = flagsOf(args, ["anchors", "issuer", "issuer-key", "threshold"]);
  const anchorsPath = f.get("anchors");
  if (!anchorsPath) throw new UsageError("check needs --anchors=PATH");
  const report = await checkExpiry({
    anchors: TrustAnchors.parse(await Deno.readTextFile(anchorsPath)),
    issuerPem: f.has("issuer") ? await Deno.readTextFile(f.get("issuer")!) : undefined,
    issuerKeyPem: f.has("issuer-key") ? await Deno.readTextFile(f.get("issuer-key")!) : undefined,
    thresholdMs: parseDurationMs(f.get("threshold") ?? "1440h", "--threshold"),
    now: Date.now(),
  });
  for (const l of report.lines) out(l);
  return report.code;
}

/** Runs the tool; returns the exit code. */
export async function runCerts(args: string[], out: (line: string) => void): Promise<number> {
  const [cmd, ...rest] = args[0]?.startsWith("--") || args.length === 0 ? ["create", ...args] : args;
  try {
    if (cmd === "create") return await create(rest, out);
    if (cmd === "check") return await check(rest, out);
    throw new UsageError(`unknown command "${cmd}"`);
  } catch (e) {
    if (e instanceof UsageError) {
      out(`certs: ${e.message}\n${USAGE}`);
      return 2;
    }
    out(`certs: ${(e as Error).message}`);
    return 2;
  }
}

export async function main(args: string[]): Promise<void> {
  const code = await runCerts(args, (l) => console.log(l));
  if (code !== 0) Deno.exit(code);
}

if (import.meta.main) await main(Deno.args);

/**
 * `deno task rotate <command> [flags]`: the guided rotation of the issuer and of the trust anchor (issue 21).
 * The only module of the rotation command that reads the environment, the arguments and files.
 */
import { createTrustAnchor } from "../../control/certs/pki.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";
import type { Pair } from "../certs.ts";
import { Kube } from "../kube.ts";
import { defaultCertsDir } from "../main.ts";
import { NAMESPACE, TRUST_DOMAIN } from "../render.ts";
import { KubeRotationCluster } from "./kube_cluster.ts";
import { rotateAnchor, rotateIssuer, summary } from "./procedure.ts";
import {
  addAnchor,
  installIssuer,
  type IssuerSource,
  Refused,
  removeAnchor,
  status,
  type StepContext,
  waitLeaves,
  type WaitOptions,
  waitTrust,
} from "./steps.ts";

export const USAGE = `usage: deno task rotate <command> [flags]   (manifests/rotation/main.ts)

anchor rotation, step by step (or all at once with \`anchor\`):
  add-anchor      --anchor-dir=DIR          DIR/ca.crt (+ ca.key) if there, else a new anchor written there
                  | --anchor-cert=PEM       (the key never goes into the cluster)
  wait-trust      every proxy and identity trusts exactly the bundle's anchors
  install-issuer  --anchor-dir=DIR | --anchor-cert=PEM --anchor-key=PEM   sign a new issuer with this anchor
                  | --issuer-cert=PEM --issuer-key=PEM                      or install this issuer
                  [--renew]  a new issuer even if the installed one is already signed by this anchor
  wait-leaves     identity signs with the installed issuer and every leaf comes from it
  remove-anchor   [--fingerprint=HEX]  drop every anchor (or this one) not signing the installed issuer
  anchor          the five steps in order, with the waits, and a last wait-trust   (alias: all)
                  --anchor-dir=DIR | --anchor-cert=PEM --anchor-key=PEM
issuer rotation:
  issuer          install-issuer --renew, then wait-leaves
                  --anchor-dir=DIR (default: deploy's certs dir) | --anchor-cert/--anchor-key
                  | --issuer-cert/--issuer-key
status            anchors, issuer, renewal signal, every component's trust and leaf, the next step

flags:  --kubeconfig=PATH (default $KUBECONFIG)  --timeout=5m (each wait)  --interval=5s
        --anchor-lifetime=87600h  --issuer-lifetime=8760h
exit:   0 done (or nothing to do), 1 refused or failed, 2 usage`;

export class UsageError extends Error {
  override name = "UsageError";
}

const COMMON = ["kubeconfig"];
const WAIT = ["timeout", "interval"];
const ANCHOR = ["anchor-dir", "anchor-cert", "anchor-key"];
const ISSUER = ["issuer-cert", "issuer-key", "issuer-lifetime"];
const FLAGS: Record<string, string[]> = {
  "add-anchor": [...ANCHOR, "anchor-lifetime"],
  "wait-trust": WAIT,
  "install-issuer": [...ANCHOR, ...ISSUER, "renew"],
  "wait-leaves": WAIT,
  "remove-anchor": ["fingerprint"],
  anchor: [...ANCHOR, "anchor-lifetime", "issuer-lifetime", ...WAIT],
  all: [...ANCHOR, "anchor-lifetime", "issuer-lifetime", ...WAIT],
  issuer: [...ANCHOR, ...ISSUER, ...WAIT],
  status: [],
};
const BOOLEAN = new Set(["renew"]);

export interface Args {
  command: string;
  flags: Map<string, string | true>;
  kubeconfig: string;
  wait: WaitOptions;
  anchorLifetimeMs: number;
  issuerLifetimeMs: number;
}

export function parseArgs(argv: string[], env: Record<string, string | undefined>): Args {
  const [command, ...rest] = argv;
  if (!command || !(command in FLAGS)) throw new UsageError(`unknown command "${command ?? ""}"`);
  const flags = new Map<string, string | true>();
  for (const a of rest) {
    const m = /^--([a-z-]+)(?:=(.*))?$/s.exec(a);
    if (!m) throw new UsageError(`${command}: unexpected argument "${a}" (flags look like --name=value)`);
    if (![...COMMON, ...FLAGS[command]].includes(m[1])) {
      throw new UsageError(`${command}: unknown flag --${m[1]}`);
    }
    if (m[2] === undefined && !BOOLEAN.has(m[1])) throw new UsageError(`${command}: --${m[1]} needs a value`);
    if (m[2] !== undefined && BOOLEAN.has(m[1])) throw new UsageError(`${command}: --${m[1]} takes no value`);
    flags.set(m[1], m[2] ?? true);
  }
  const str = (k: string) => {
    const v = flags.get(k);
    return typeof v === "string" ? v : undefined;
  };
  const duration = (k: string, d: string) => {
    try {
      return parseDurationMs(str(k) ?? d, `--${k}`);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  };
  const given = ["anchor-dir", "anchor-cert", "issuer-cert"].filter((k) => flags.has(k));
  if (given.length > 1) throw new UsageError(`${command}: --${given.join(" and --")} exclude each other`);
  if (flags.has("anchor-key") && !flags.has("anchor-cert")) {
    throw new UsageError(`${command}: --anchor-key goes with --anchor-cert`);
  }
  if (flags.has("issuer-cert") !== flags.has("issuer-key")) {
    throw new UsageError(`${command}: --issuer-cert and --issuer-key go together`);
  }
  const needsKey = ["install-issuer", "anchor", "all", "issuer"].includes(command);
  if (needsKey && flags.has("anchor-cert") && !flags.has("anchor-key")) {
    throw new UsageError(`${command}: --anchor-cert needs --anchor-key (the anchor signs the new issuer)`);
  }
  if (["add-anchor", "anchor", "all"].includes(command) && given.length === 0) {
    throw new UsageError(
      `${command}: name the new anchor: --anchor-dir=DIR (created there if absent) or --anchor-cert`,
    );
  }
  if (command === "install-issuer" && given.length === 0) {
    throw new UsageError(
      `${command}: --anchor-dir, --anchor-cert/--anchor-key or --issuer-cert/--issuer-key`,
    );
  }
  const wait = { timeoutMs: duration("timeout", "5m"), intervalMs: duration("interval", "5s") };
  if (wait.intervalMs < 500) throw new UsageError("--interval: at least 500ms");
  return {
    command,
    flags,
    kubeconfig: str("kubeconfig") ?? (env.KUBECONFIG?.split(":")[0] || `${env.HOME ?? ""}/.kube/config`),
    wait,
    anchorLifetimeMs: duration("anchor-lifetime", "87600h"),
    issuerLifetimeMs: duration("issuer-lifetime", "8760h"),
  };
}

async function readFile(path: string, flag: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    throw new UsageError(`--${flag}=${path}: ${(e as Error).message}`);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/**
 * The anchor of `--anchor-dir` (ca.crt + ca.key, as `deno task certs --out` writes them), creating it there when
 * `create` and the directory holds neither. The key is written with mode 0600 and never leaves this machine.
 */
export async function anchorFromDir(
  dir: string,
  o: { create: boolean; lifetimeMs: number; commonName: string; log: (s: string) => void },
): Promise<Pair> {
  const crt = `${dir}/ca.crt`, key = `${dir}/ca.key`;
  const [hasCrt, hasKey] = [await exists(crt), await exists(key)];
  if (hasCrt && hasKey) {
    return { certPem: await readFile(crt, "anchor-dir"), keyPem: await readFile(key, "anchor-dir") };
  }
  if (hasCrt || hasKey) {
    throw new UsageError(
      `--anchor-dir=${dir}: holds ${hasCrt ? "ca.crt but no ca.key" : "ca.key but no ca.crt"}`,
    );
  }
  if (!o.create) throw new UsageError(`--anchor-dir=${dir}: no ca.crt and ca.key there`);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const a = await createTrustAnchor({
    commonName: o.commonName,
    lifetimeMs: o.lifetimeMs,
    now: Date.now(),
    skewMs: 60_000,
  });
  // The key first, exclusively: a second run racing this one fails here instead of overwriting.
  await Deno.writeTextFile(key, a.keyPem, { mode: 0o600, createNew: true });
  await Deno.chmod(key, 0o600);
  await Deno.writeTextFile(crt, a.certPem, { createNew: true });
  o.log(
    `created a new trust anchor (${a.cert.subject}, expires ${a.cert.notAfter.toISOString()}): ${crt}, key ${key} ` +
      `(mode 0600; keep it offline, it is not written to the cluster)`,
  );
  return { certPem: a.certPem, keyPem: a.keyPem };
}

/** `root-<UTC date and time>.<ns>.<td>`: distinct from the anchor it replaces, so the two are told apart. */
export function newAnchorName(now: number): string {
  const t = new Date(now).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z").toLowerCase();
  return `root-${t}.${NAMESPACE}.${TRUST_DOMAIN}`;
}

async function anchorPair(a: Args, create: boolean, log: (s: string) => void): Promise<Pair> {
  const dir = a.flags.get("anchor-dir");
  if (typeof dir === "string") {
    return await anchorFromDir(dir, {
      create,
      lifetimeMs: a.anchorLifetimeMs,
      commonName: newAnchorName(Date.now()),
      log,
    });
  }
  const cert = a.flags.get("anchor-cert") as string;
  const key = a.flags.get("anchor-key");
  return {
    certPem: await readFile(cert, "anchor-cert"),
    keyPem: typeof key === "string" ? await readFile(key, "anchor-key") : "",
  };
}

async function issuerSource(a: Args, kube: Kube, log: (s: string) => void): Promise<IssuerSource> {
  const ic = a.flags.get("issuer-cert");
  if (typeof ic === "string") {
    return {
      kind: "given",
      issuer: {
        certPem: await readFile(ic, "issuer-cert"),
        keyPem: await readFile(a.flags.get("issuer-key") as string, "issuer-key"),
      },
    };
  }
  if (!a.flags.has("anchor-dir") && !a.flags.has("anchor-cert")) {
    // Issuer rotation under the anchor deploy made: deploy keeps its key there.
    const dir = defaultCertsDir(kube.server, Deno.env.toObject());
    log(
      `using the trust anchor deploy saved in ${dir} (pass --anchor-dir or --anchor-cert/--anchor-key for another)`,
    );
    a.flags.set("anchor-dir", dir);
  }
  const anchor = await anchorPair(a, false, log);
  const renew = a.command === "issuer" || a.flags.get("renew") === true;
  return { kind: "create", anchor, lifetimeMs: a.issuerLifetimeMs, renew };
}

export async function main(argv: string[]): Promise<number> {
  let a: Args;
  try {
    a = parseArgs(argv, Deno.env.toObject());
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`${e.message}\n\n${USAGE}`);
    return 2;
  }
  const log = (s: string) => console.log(s);
  try {
    const kube = Kube.fromFile(a.kubeconfig);
    const ctx: StepContext = {
      cluster: new KubeRotationCluster(kube),
      now: () => Date.now(),
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      log,
      namespace: NAMESPACE,
      trustDomain: TRUST_DOMAIN,
    };
    switch (a.command) {
      case "status":
        for (const l of await status(ctx)) log(l);
        return 0;
      case "add-anchor":
        await addAnchor(ctx, (await anchorPair(a, true, log)).certPem);
        return 0;
      case "wait-trust":
        await waitTrust(ctx, a.wait);
        return 0;
      case "install-issuer":
        await installIssuer(ctx, await issuerSource(a, kube, log));
        return 0;
      case "wait-leaves":
        await waitLeaves(ctx, a.wait);
        return 0;
      case "remove-anchor": {
        const fp = a.flags.get("fingerprint");
        await removeAnchor(ctx, typeof fp === "string" ? [fp.toLowerCase().replace(/:/g, "")] : undefined);
        return 0;
      }
      case "anchor":
      case "all": {
        const anchor = await anchorPair(a, true, log);
        if (!anchor.keyPem) {
          throw new UsageError(`${a.command}: the new anchor's key is needed to sign the issuer`);
        }
        log(
          summary(
            "anchor",
            await rotateAnchor(ctx, { anchor, issuerLifetimeMs: a.issuerLifetimeMs, wait: a.wait }),
          ),
        );
        return 0;
      }
      case "issuer":
        log(
          summary(
            "issuer",
            await rotateIssuer(ctx, { source: await issuerSource(a, kube, log), wait: a.wait }),
          ),
        );
        return 0;
    }
    return 2;
  } catch (e) {
    if (e instanceof Refused) {
      console.error(e.message);
      return 1;
    }
    if (e instanceof UsageError) {
      console.error(`${a.command}: ${e.message}`);
      return 2;
    }
    console.error(`${a.command}: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));

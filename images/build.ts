// Builds the project's OCI images without a Docker engine: a root filesystem staged in a directory, one
// uncompressed layer, and an OCI layout archive that `ctr -n k8s.io images import` accepts. Each image is rebuilt
// only when its content hash changes, so a warm `cluster:up` skips this work.
//
// Images: localhost/weft:dev (Deno + project code + npm cache + iptables), localhost/pause:weft (the sandbox
// image containerd starts for every pod), localhost/coredns:weft (cluster DNS), localhost/prometheus:weft (the
// embedded metrics store: the binary of Debian's `prometheus` package, fetched with `apt-get download` at build
// time and kept in the cache, so neither the build after the first nor any pod touches the network).
//
// The weft image runs as any UID (root for init, 2102 for the proxy, 2103 for the control plane, whatever an app
// picks) with a read-only root filesystem: everything is owned by root and world-readable, and Deno's caches
// (npm packages and transpiled modules of every entry point) are baked in, so `--cached-only` never downloads.
// Its commands (`weft-proxy`, `weft-init`, `weft-await`, `weft-control <component>`) are symlinks to one small
// static launcher (images/launcher) that execs Deno with the right entry point; the image has no shell.
//
// CLI: `deno run -A images/build.ts [--cache DIR] [--only weft,pause,coredns,prometheus]` builds and prints the archive paths.

import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

export const WEFT_IMAGE = "localhost/weft:dev";
export const PAUSE_IMAGE = "localhost/pause:weft";
export const COREDNS_IMAGE = "localhost/coredns:weft";
export const PROMETHEUS_IMAGE = "localhost/prometheus:weft";
/** The Debian package the Prometheus image is made from. */
export const PROMETHEUS_PACKAGE = "prometheus";

/** Where the project code lives inside the weft image; also its working directory. */
export const APP_DIR = "/app";
const DENO_DIR_IN_IMAGE = "/deno-dir";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * Entry points whose dependencies and transpiled modules are cached into the image; the ones that exist are
 * used. control/main.ts imports its component by a computed path, so each component is listed too.
 */
const ENTRY_POINTS = [
  "control/main.ts",
  "control/destination/main.ts",
  "control/policy/main.ts",
  "control/identity/main.ts",
  "control/injector/main.ts",
  "control/validator/main.ts",
  "control/tap/main.ts",
  "control/dashboard/main.ts",
  "control/injector/await.ts",
  "control/scrape_targets/main.ts",
  "control/multicluster/main.ts",
  "proxy/main.ts",
  "init/main.ts",
];
/** Directories of apps that pods run (demo and test workloads): each non-test .ts file is an entry point. */
const APP_DIRS = ["tests/cluster/demo", "tests/demo/apps", "tests/e2e/apps"];
/**
 * Project paths copied into the image. The dashboard (control/dashboard/, its page files with it) reads through
 * the CLI's code and mesh:check's, so cli/, manifests/ and the modules manifests/ imports from images/ and
 * tests/cluster/ (constants only) ship too.
 */
const APP_PATHS = [
  "deno.json",
  "deno.lock",
  "proto",
  "control",
  "proxy",
  "init",
  "cli",
  "manifests",
  "images/build.ts",
  // manifests/target.ts names the local cluster's paths (a standalone module, no imports of its own).
  "tests/cluster/config.ts",
  ...APP_DIRS,
];

/** The image's commands, each a symlink to the launcher (see images/launcher/main.go for what each runs). */
export const IMAGE_COMMANDS = ["weft-proxy", "weft-init", "weft-await", "weft-control"] as const;
const LAUNCHER = "/usr/local/bin/weft-launcher";

/** Users the image knows by name (the proxy's UID is the injector's default; the control plane runs as 2103). */
const USERS = [
  { name: "root", uid: 0, home: "/root" },
  { name: "weft-proxy", uid: 2102, home: "/" },
  { name: "weft", uid: 2103, home: "/" },
  { name: "nobody", uid: 65534, home: "/nonexistent" },
];

export interface BuiltImage {
  name: string;
  archive: string;
  /** sha256 digest of the image manifest, as containerd lists it. */
  digest: string;
  rebuilt: boolean;
}

export type ImageKey = "pause" | "coredns" | "weft" | "prometheus";
export const IMAGE_KEYS: readonly ImageKey[] = ["pause", "coredns", "weft", "prometheus"];

export interface BuildOptions {
  cacheDir: string;
  /** The CoreDNS binary to package (built with the cluster); needed only for the coredns image. */
  corednsBinary: string;
  log: (s: string) => void;
  /** Build only these images (default: all). */
  only?: ImageKey[];
}

async function run(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", ...opts }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return text;
}

async function sha256File(path: string): Promise<string> {
  return (await run("sha256sum", [path])).split(" ")[0];
}

async function sha256Bytes(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

async function* walk(path: string): AsyncGenerator<string> {
  const info = await Deno.lstat(path);
  if (!info.isDirectory) {
    yield path;
    return;
  }
  const names: string[] = [];
  for await (const e of Deno.readDir(path)) names.push(e.name);
  for (const n of names.sort()) yield* walk(join(path, n));
}

/** Unit tests and dot-directories (scratch work) are not shipped, so editing them does not rebuild the image. */
function shipped(path: string): boolean {
  return !path.endsWith("_test.ts") && !path.split("/").some((seg) => seg.startsWith("."));
}

/** Hash of file paths and contents, so a content change (not a timestamp) triggers a rebuild. */
async function hashTree(root: string, paths: string[], extra: string[]): Promise<string> {
  const h: string[] = [...extra];
  for (const p of paths) {
    const abs = join(root, p);
    if (!(await exists(abs))) continue;
    for await (const f of walk(abs)) {
      const rel = relative(root, f);
      if (shipped(rel)) h.push(rel, await sha256Bytes(await Deno.readFile(f)));
    }
  }
  return await sha256Bytes(new TextEncoder().encode(h.join("\n")));
}

/** Copies a host file into the rootfs at the same path, resolving symlinks to their target's content. */
async function copyHost(rootfs: string, path: string, as = path) {
  const dest = join(rootfs, as);
  await Deno.mkdir(dirname(dest), { recursive: true });
  await Deno.copyFile(await Deno.realPath(path), dest);
  await Deno.chmod(dest, (await Deno.stat(path)).mode! & 0o7777);
}

/** The shared libraries a dynamically linked binary loads, from ldd. */
async function libsOf(binary: string): Promise<string[]> {
  const out = await run("ldd", [binary]);
  const libs: string[] = [];
  for (const line of out.split("\n")) {
    const m = line.match(/=>\s+(\/\S+)/) ?? line.match(/^\s+(\/\S+)\s+\(/);
    if (m) libs.push(m[1]);
  }
  return libs;
}

interface OciConfig {
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
}

/** Writes an OCI layout archive of one uncompressed layer made from `rootfs`. Returns the manifest digest. */
async function writeOciArchive(rootfs: string, work: string, name: string, cfg: OciConfig, archive: string) {
  const layout = join(work, "layout");
  await Deno.remove(layout, { recursive: true }).catch(() => {});
  const blobs = join(layout, "blobs", "sha256");
  await Deno.mkdir(blobs, { recursive: true });
  // Fixed owner and mtime keep the layer digest a function of the content only.
  const layer = join(work, "layer.tar");
  await run("tar", [
    "--sort=name",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mtime=@0",
    "-C",
    rootfs,
    "-cf",
    layer,
    ".",
  ]);
  const layerDigest = await sha256File(layer);
  const layerSize = (await Deno.stat(layer)).size;
  await Deno.rename(layer, join(blobs, layerDigest));

  const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
  const blob = async (o: unknown) => {
    const bytes = enc(o);
    const digest = await sha256Bytes(bytes);
    await Deno.writeFile(join(blobs, digest), bytes);
    return { digest: `sha256:${digest}`, size: bytes.length };
  };
  const config = await blob({
    architecture: "amd64",
    os: "linux",
    config: {
      Entrypoint: cfg.entrypoint,
      Cmd: cfg.cmd,
      Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ...(cfg.env ?? [])],
      WorkingDir: cfg.workingDir ?? "/",
    },
    rootfs: { type: "layers", diff_ids: [`sha256:${layerDigest}`] },
  });
  const manifest = await blob({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
    layers: [{
      mediaType: "application/vnd.oci.image.layer.v1.tar",
      digest: `sha256:${layerDigest}`,
      size: layerSize,
    }],
  });
  await Deno.writeTextFile(join(layout, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  await Deno.writeTextFile(
    join(layout, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        ...manifest,
        annotations: {
          "io.containerd.image.name": name,
          "org.opencontainers.image.ref.name": name.split(":")[1],
        },
      }],
    }),
  );
  const tmp = `${archive}.tmp`;
  await run("tar", ["-C", layout, "-cf", tmp, "oci-layout", "index.json", "blobs"]);
  await Deno.rename(tmp, archive);
  await Deno.remove(layout, { recursive: true });
  return manifest.digest;
}

/** Builds one image when its input hash changed; `stage` fills the rootfs. */
async function buildImage(
  opts: BuildOptions,
  key: string,
  name: string,
  inputHash: string,
  cfg: OciConfig,
  stage: (rootfs: string) => Promise<void>,
): Promise<BuiltImage> {
  const work = join(opts.cacheDir, key);
  const archive = join(opts.cacheDir, `${key}.oci.tar`);
  const stampFile = join(opts.cacheDir, `${key}.stamp.json`);
  try {
    const stamp = JSON.parse(await Deno.readTextFile(stampFile)) as { hash: string; digest: string };
    if (stamp.hash === inputHash && (await exists(archive))) {
      return { name, archive, digest: stamp.digest, rebuilt: false };
    }
  } catch { /* no stamp yet */ }
  opts.log(`image ${name}: building`);
  const start = Date.now();
  await Deno.remove(work, { recursive: true }).catch(() => {});
  const rootfs = join(work, "rootfs");
  await Deno.mkdir(rootfs, { recursive: true });
  await stage(rootfs);
  const digest = await writeOciArchive(rootfs, work, name, cfg, archive);
  await Deno.remove(work, { recursive: true });
  await Deno.writeTextFile(stampFile, JSON.stringify({ hash: inputHash, digest }));
  const mb = ((await Deno.stat(archive)).size / 1e6).toFixed(0);
  opts.log(`image ${name}: built ${mb} MB in ${((Date.now() - start) / 1000).toFixed(1)}s`);
  return { name, archive, digest, rebuilt: true };
}

async function buildPause(opts: BuildOptions): Promise<BuiltImage> {
  const bin = await goBuild(opts, "pause", "pause-bin");
  const hash = await sha256File(bin);
  return await buildImage(opts, "pause", PAUSE_IMAGE, hash, { entrypoint: ["/pause"] }, async (rootfs) => {
    await copyHost(rootfs, bin, "/pause");
  });
}

async function buildCoreDns(opts: BuildOptions): Promise<BuiltImage> {
  const hash = await sha256File(opts.corednsBinary);
  const cfg = { entrypoint: ["/coredns"] };
  return await buildImage(opts, "coredns", COREDNS_IMAGE, hash, cfg, async (rootfs) => {
    await copyHost(rootfs, opts.corednsBinary, "/coredns");
  });
}

/**
 * The `prometheus` .deb in the cache: the one already there, else `apt-get download` of the candidate version
 * (apt's own sources; this machine's apt configuration decides the mirror).
 */
async function prometheusDeb(opts: BuildOptions): Promise<string> {
  const dir = join(opts.cacheDir, "debs");
  await Deno.mkdir(dir, { recursive: true });
  const find = async () => {
    const found: string[] = [];
    for await (const e of Deno.readDir(dir)) {
      if (e.name.startsWith(`${PROMETHEUS_PACKAGE}_`) && e.name.endsWith(".deb")) found.push(e.name);
    }
    return found.sort().at(-1);
  };
  let deb = await find();
  if (!deb) {
    opts.log(`image ${PROMETHEUS_IMAGE}: apt-get download ${PROMETHEUS_PACKAGE}`);
    try {
      await run("apt-get", ["download", PROMETHEUS_PACKAGE], { cwd: dir });
    } catch (e) {
      throw new Error(
        `the Prometheus image needs Debian's ${PROMETHEUS_PACKAGE} package: ${(e as Error).message} ` +
          `(run apt-get update, or put ${PROMETHEUS_PACKAGE}_*.deb into ${dir}; or deploy --prometheus=none)`,
      );
    }
    deb = await find();
    if (!deb) throw new Error(`apt-get download ${PROMETHEUS_PACKAGE} left no .deb in ${dir}`);
  }
  return join(dir, deb);
}

/** Users of the Prometheus image: it runs as nobody, as Linkerd's viz Prometheus does. */
const PROMETHEUS_USERS = USERS.filter((u) => u.uid === 0 || u.uid === 65534);

async function buildPrometheus(opts: BuildOptions): Promise<BuiltImage> {
  const deb = await prometheusDeb(opts);
  const versions = await run("dpkg-query", ["-W", "libc6"]);
  const hash = await sha256Bytes(
    new TextEncoder().encode(
      [await sha256File(deb), versions, await sha256File(join(HERE, "build.ts"))].join("\n"),
    ),
  );
  const cfg: OciConfig = {
    entrypoint: ["/usr/bin/prometheus"],
    cmd: ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/data"],
    workingDir: "/data",
  };
  return await buildImage(opts, "prometheus", PROMETHEUS_IMAGE, hash, cfg, async (rootfs) => {
    // Only the server binary: the package's web assets, promtool and service files are not needed to serve
    // the HTTP API the CLI queries.
    const extract = join(rootfs, "..", "deb");
    await Deno.mkdir(extract, { recursive: true });
    await run("dpkg-deb", ["-x", deb, extract]);
    const bin = join(extract, "usr/bin/prometheus");
    await copyHost(rootfs, bin, "/usr/bin/prometheus");
    for (const l of await libsOf(bin)) await copyHost(rootfs, l);
    await Deno.remove(extract, { recursive: true });
    await Deno.mkdir(join(rootfs, "etc/prometheus"), { recursive: true });
    await Deno.writeTextFile(
      join(rootfs, "etc/passwd"),
      PROMETHEUS_USERS.map((u) => `${u.name}:x:${u.uid}:${u.uid}:${u.name}:${u.home}:/bin/false\n`).join(""),
    );
    await Deno.writeTextFile(
      join(rootfs, "etc/group"),
      PROMETHEUS_USERS.map((u) => `${u.name}:x:${u.uid}:\n`).join(""),
    );
    await Deno.writeTextFile(join(rootfs, "etc/nsswitch.conf"), "hosts: files dns\n");
    for (const d of ["tmp", "data"]) await Deno.mkdir(join(rootfs, d), { recursive: true });
    await Deno.chmod(join(rootfs, "tmp"), 0o1777);
  });
}

const IPTABLES_TOOLS = ["iptables", "ip6tables"].flatMap((t) =>
  ["", "-save", "-restore"].flatMap((what) => [`${t}${what}`, `${t}-nft${what}`])
);

/** Builds a static Go binary from images/<dir> into the cache; returns its path. */
async function goBuild(opts: BuildOptions, dir: string, out: string): Promise<string> {
  const bin = join(opts.cacheDir, out);
  await run("/usr/local/go/bin/go", ["build", "-trimpath", "-ldflags=-s -w", "-o", bin, "."], {
    cwd: join(HERE, dir),
    env: { CGO_ENABLED: "0", GOFLAGS: "-mod=mod -buildvcs=false" },
  });
  return bin;
}

/** Every existing entry point, relative to the repository. */
async function entryPoints(): Promise<string[]> {
  const out: string[] = [];
  for (const e of ENTRY_POINTS) if (await exists(join(REPO, e))) out.push(e);
  for (const d of APP_DIRS) {
    if (!(await exists(join(REPO, d)))) continue;
    for await (const f of walk(join(REPO, d))) {
      const rel = relative(REPO, f);
      if (rel.endsWith(".ts") && shipped(rel)) out.push(rel);
    }
  }
  return out;
}

/**
 * Transpiles every entry point inside the staged root filesystem (chroot, private mount namespace), so the
 * emit cache is keyed by the paths the modules have in the image (/app/...): a pod then starts without
 * transpiling anything. The chroot has no resolver configuration, so this also proves that the image needs
 * nothing from the network; `--frozen` that the lockfile is complete.
 */
async function warmEmitCache(rootfs: string, entries: string[]) {
  for (const d of ["dev", "proc"]) await Deno.mkdir(join(rootfs, d), { recursive: true });
  const script = [
    "set -e",
    'mount --rbind /dev "$ROOTFS/dev"',
    'mount -t proc proc "$ROOTFS/proc"',
    'exec chroot "$ROOTFS" "$@"',
  ].join("\n");
  const cmd = [
    "/usr/local/bin/deno",
    "cache",
    "--frozen",
    `--config=${APP_DIR}/deno.json`,
    ...entries.map((e) => `${APP_DIR}/${e}`),
  ];
  const out = await new Deno.Command("unshare", {
    args: ["--mount", "--propagation", "private", "--fork", "--", "/bin/sh", "-c", script, "sh", ...cmd],
    clearEnv: true,
    env: {
      ROOTFS: rootfs,
      PATH: "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      DENO_DIR: DENO_DIR_IN_IMAGE,
      DENO_NO_UPDATE_CHECK: "1",
      HOME: "/root",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `deno cache inside the image failed (a dependency is not cached?): ${
        new TextDecoder().decode(out.stderr).trim().split("\n").slice(-15).join("\n")
      }`,
    );
  }
}

async function buildWeft(opts: BuildOptions): Promise<BuiltImage> {
  const deno = Deno.execPath();
  const multi = "/usr/sbin/xtables-nft-multi";
  const versions = await run("dpkg-query", ["-W", "iptables", "libc6", "libnftnl11", "libmnl0"]);
  const entries = await entryPoints();
  const launcher = await goBuild(opts, "launcher", "launcher-bin");
  const hash = await hashTree(REPO, [...APP_PATHS, "images/build.ts", "images/launcher"], [
    Deno.version.deno,
    await sha256File(deno),
    await sha256File(launcher),
    versions,
    ...entries,
  ]);
  const cfg: OciConfig = {
    entrypoint: ["/usr/local/bin/deno"],
    cmd: ["run", "-A", "--cached-only", "tests/cluster/demo/server.ts"],
    env: [`DENO_DIR=${DENO_DIR_IN_IMAGE}`, "DENO_NO_UPDATE_CHECK=1", "DENO_NO_PROMPT=1", "HOME=/root"],
    workingDir: APP_DIR,
  };
  return await buildImage(opts, "weft", WEFT_IMAGE, hash, cfg, async (rootfs) => {
    // Deno and iptables are dynamically linked against the host's glibc: ship exactly the libraries they load.
    await copyHost(rootfs, deno, "/usr/local/bin/deno");
    await copyHost(rootfs, launcher, LAUNCHER);
    for (const c of IMAGE_COMMANDS) await Deno.symlink("weft-launcher", join(rootfs, "usr/local/bin", c));
    await copyHost(rootfs, multi);
    // init calls the backend-qualified names (iptables-nft-save ...); the plain names serve people debugging.
    for (const t of IPTABLES_TOOLS) await Deno.symlink("xtables-nft-multi", join(rootfs, "usr/sbin", t));
    const libs = new Set([...(await libsOf(deno)), ...(await libsOf(multi))]);
    for (const l of libs) await copyHost(rootfs, l);
    // iptables loads its match and target extensions at run time.
    for await (const f of walk("/usr/lib/x86_64-linux-gnu/xtables")) await copyHost(rootfs, f);
    for (const f of ["/etc/protocols", "/etc/services", "/etc/ethertypes"]) {
      if (await exists(f)) await copyHost(rootfs, f);
    }
    await Deno.mkdir(join(rootfs, "etc"), { recursive: true });
    await Deno.writeTextFile(
      join(rootfs, "etc/passwd"),
      USERS.map((u) => `${u.name}:x:${u.uid}:${u.uid}:${u.name}:${u.home}:/bin/false\n`).join(""),
    );
    await Deno.writeTextFile(join(rootfs, "etc/group"), USERS.map((u) => `${u.name}:x:${u.uid}:\n`).join(""));
    await Deno.writeTextFile(join(rootfs, "etc/nsswitch.conf"), "hosts: files dns\n");
    for (const d of ["tmp", "root", "run", "var/run"]) await Deno.mkdir(join(rootfs, d), { recursive: true });
    await Deno.chmod(join(rootfs, "tmp"), 0o1777);
    // The iptables lock file lives in /run; an empty one saves a "could not open lock" warning.
    await Deno.writeTextFile(join(rootfs, "run/xtables.lock"), "");

    const app = join(rootfs, APP_DIR);
    for (const p of APP_PATHS) {
      const src = join(REPO, p);
      if (!(await exists(src))) continue;
      for await (const f of walk(src)) {
        if (!shipped(relative(REPO, f))) continue;
        const dest = join(app, relative(REPO, f));
        await Deno.mkdir(dirname(dest), { recursive: true });
        await Deno.copyFile(f, dest);
      }
    }
    // Nothing may be downloaded when a pod runs: cache every npm and remote dependency of the entry points
    // into a DENO_DIR kept across builds on the host, then ship a copy.
    const denoDir = join(opts.cacheDir, "deno-dir");
    if (entries.length > 0) {
      opts.log(`image ${WEFT_IMAGE}: deno cache (${entries.length} entry points)`);
      await run(deno, ["cache", ...entries], {
        cwd: app,
        env: { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: "1" },
      });
    }
    const imageDenoDir = join(rootfs, DENO_DIR_IN_IMAGE);
    await run("cp", ["-a", denoDir, imageDenoDir]);
    // The host's emit cache is keyed by host paths: useless in the image, so it is replaced by one made inside.
    await Deno.remove(join(imageDenoDir, "gen"), { recursive: true }).catch(() => {});
    if (entries.length > 0 && Deno.uid() === 0) await warmEmitCache(rootfs, entries);
    else if (entries.length > 0) {
      opts.log(`image ${WEFT_IMAGE}: not root, so modules are transpiled at pod start`);
    }
    // Readable (and directories searchable) by every UID a container may run as.
    await run("chmod", ["-R", "a+rX,go-w", app, imageDenoDir]);
  });
}

/**
 * Builds every image the cluster needs (only those whose inputs changed). Holds an exclusive lock on the cache
 * directory, so a `deploy` and a `cluster:up` started together take turns instead of sharing a staging tree.
 */
export async function buildImages(opts: BuildOptions): Promise<BuiltImage[]> {
  await Deno.mkdir(join(opts.cacheDir, "deno-dir"), { recursive: true });
  const builders: Record<ImageKey, (o: BuildOptions) => Promise<BuiltImage>> = {
    pause: buildPause,
    coredns: buildCoreDns,
    weft: buildWeft,
    prometheus: buildPrometheus,
  };
  const lock = await Deno.open(join(opts.cacheDir, ".build.lock"), { create: true, write: true });
  try {
    await lock.lock(true);
    const out: BuiltImage[] = [];
    for (const key of opts.only ?? IMAGE_KEYS) out.push(await builders[key](opts));
    return out;
  } finally {
    lock.close();
  }
}

/**
 * Imports the images into containerd's CRI namespace unless the same manifest digest is already there.
 * `ctr` is given the socket of the cluster's containerd.
 */
export async function importImages(images: BuiltImage[], address: string, log: (s: string) => void) {
  const listed = await run("ctr", ["-a", address, "-n", "k8s.io", "images", "ls"]);
  for (const img of images) {
    const present = listed.split("\n").some((l) => {
      const cols = l.split(/\s+/);
      return cols[0] === img.name && cols.includes(img.digest);
    });
    if (present) continue;
    log(`image ${img.name}: importing into containerd`);
    await run("ctr", ["-a", address, "-n", "k8s.io", "images", "import", img.archive]);
  }
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--cache");
  const cacheDir = i >= 0 ? Deno.args[i + 1] : "/var/cache/weft/images";
  const j = Deno.args.indexOf("--coredns");
  const corednsBinary = j >= 0 ? Deno.args[j + 1] : "/var/cache/weft/cluster/coredns-v1.14.7/coredns";
  const k = Deno.args.indexOf("--only");
  const only = k >= 0 ? Deno.args[k + 1].split(",") as ImageKey[] : undefined;
  for (const key of only ?? []) {
    if (!IMAGE_KEYS.includes(key)) throw new Error(`--only: "${key}" is not one of ${IMAGE_KEYS.join(", ")}`);
  }
  await Deno.mkdir(cacheDir, { recursive: true });
  for (const img of await buildImages({ cacheDir, corednsBinary, log: console.log, only })) {
    console.log(`${img.name} ${img.digest} ${img.archive}${img.rebuilt ? " (rebuilt)" : ""}`);
  }
}

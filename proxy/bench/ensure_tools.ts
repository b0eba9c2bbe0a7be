/**
 * The reference pair (nginx with the stream module) and the gRPC backend (nghttpd) for
 * `deno task bench:dataplane`: installed with apt-get when absent, as `cluster:up` installs its
 * packages, and only packages that .ci/debian-packages lists (nothing fetched from anywhere else).
 * When they cannot be installed the caller is told why, so the summary can say which figures are
 * missing instead of printing none silently.
 */

/** Debian packages the bench needs, each with what it provides. */
export const BENCH_PACKAGES = ["nginx-light", "libnginx-mod-stream", "nghttp2-server"] as const;
export const STREAM_MODULE = "/usr/lib/nginx/modules/ngx_stream_module.so";

export interface BenchTools {
  nginx: string;
  nghttpd: string;
  /** nginx and its stream module are both present. */
  reference: boolean;
  /** Why a tool is missing (empty when everything is there). */
  problems: string[];
  /** Packages this run installed. */
  installed: string[];
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<Ran> {
  try {
    const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped", stdin: "null" })
      .output();
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
  } catch (e) {
    return { code: 127, stdout: "", stderr: `${cmd}: ${e instanceof Error ? e.message : e}` };
  }
}

const which = async (bin: string) => (await run("sh", ["-c", `command -v ${bin}`])).stdout.trim();
const exists = (p: string) => Deno.stat(p).then(() => true, () => false);

async function installed(pkg: string): Promise<boolean> {
  const r = await run("dpkg-query", ["-W", "-f=${Status}", pkg]);
  return r.stdout.includes("install ok installed");
}

/** Packages listed in .ci/debian-packages (the bench installs nothing outside that list). */
async function ciPackages(): Promise<Set<string>> {
  const file = new URL("../../.ci/debian-packages", import.meta.url).pathname;
  const text = await Deno.readTextFile(file).catch(() => "");
  return new Set(text.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#")));
}

export async function ensureBenchTools(log: (s: string) => void): Promise<BenchTools> {
  const problems: string[] = [];
  const done: string[] = [];
  const missing: string[] = [];
  const allowed = await ciPackages();
  if (!await which("dpkg-query")) {
    problems.push(
      "not a Debian system (no dpkg-query): install nginx with the stream module and nghttpd by hand",
    );
  } else {
    for (const p of BENCH_PACKAGES) {
      if (!allowed.has(p)) problems.push(`${p} is not listed in .ci/debian-packages, not installing it`);
      else if (!await installed(p)) missing.push(p);
    }
  }
  if (missing.length) {
    log(`bench:dataplane: apt-get install ${missing.join(" ")}`);
    const env = { DEBIAN_FRONTEND: "noninteractive" };
    const update = await run("apt-get", ["update", "-qq"], env);
    const install = update.code === 0
      ? await run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], env)
      : update;
    if (install.code !== 0) {
      problems.push(
        `apt-get install ${missing.join(" ")} failed (exit ${install.code}): ${
          install.stderr.trim().slice(-400)
        }`,
      );
    } else done.push(...missing);
  }
  const nginx = await which("nginx");
  const nghttpd = await which("nghttpd");
  const module = await exists(STREAM_MODULE);
  if (!nginx) problems.push("nginx not found (Debian: nginx-light): no reference figures");
  else if (!module) problems.push(`${STREAM_MODULE} not found (libnginx-mod-stream): no reference figures`);
  if (!nghttpd) problems.push("nghttpd not found (Debian: nghttp2-server): no gRPC figures");
  return { nginx, nghttpd, reference: nginx !== "" && module, problems, installed: done };
}

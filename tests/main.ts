/**
 * `deno task test`: runs every tier and ends with one line `N passed, N failed, N skipped`.
 *
 *   deno task test              checks + unit tiers + cluster tier
 *   deno task test --unit       checks + unit tiers only
 *   deno task test --cluster    cluster tier only
 *   deno task test --no-checks  skip fmt/lint/type/import-boundary/generated-code checks
 *
 * The cluster tier uses the cluster in KUBECONFIG when set, otherwise starts the local one
 * (tests/cluster), and deploys the mesh onto it first (the e2e tests need it). Under CI
 * (CI=true) an unavailable cluster is a failure, not a skip.
 */
import { addOutcome, countJunit, emptyOutcome, type Outcome } from "./lib/junit.ts";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const args = new Set(Deno.args);
const onlyUnit = args.has("--unit");
const onlyCluster = args.has("--cluster");
const runChecks = !args.has("--no-checks") && !onlyCluster;
const inCi = Deno.env.get("CI") === "true";
const deno = Deno.execPath();

const total = emptyOutcome();

function log(line: string): void {
  console.log(`[test] ${line}`);
}

async function run(cmd: string, argv: string[], env?: Record<string, string>): Promise<number> {
  let child;
  try {
    child = new Deno.Command(cmd, { args: argv, cwd: root, env, stdout: "inherit", stderr: "inherit" })
      .spawn();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    console.error(`[test] ${cmd} is not installed (not on PATH)`);
    return 127;
  }
  return (await child.status).code;
}

async function check(name: string, cmd: string, argv: string[], env?: Record<string, string>): Promise<void> {
  log(`check: ${name}`);
  const code = await run(cmd, argv, env);
  if (code === 0) total.passed++;
  else {
    total.failed++;
    total.failures.push(`check: ${name} (exit ${code})`);
  }
}

async function walkTests(dir: string, out: string[]): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    if (e.name.startsWith(".") || e.name === "node_modules" || e.name === "gen") continue;
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) await walkTests(p, out);
    else if (e.isFile && e.name.endsWith("_test.ts")) out.push(p.slice(root.length + 1));
  }
}

/**
 * Cluster-tier tests: everything under tests/ (except tests/lib, unit tests of helpers) and any
 * `*_cluster_test.ts` beside the code. They get KUBECONFIG in their environment.
 */
function isClusterTest(path: string): boolean {
  return (path.startsWith("tests/") && !path.startsWith("tests/lib/")) || path.endsWith("_cluster_test.ts");
}

async function denoTest(tier: string, files: string[], env?: Record<string, string>): Promise<Outcome> {
  if (files.length === 0) {
    log(`${tier}: no test files`);
    return emptyOutcome();
  }
  const junit = await Deno.makeTempFile({ prefix: `weft-${tier.replaceAll(" ", "-")}-`, suffix: ".xml" });
  log(`${tier}: ${files.length} test files`);
  let code = 0;
  let out = emptyOutcome();
  for (let attempt = 1; attempt <= 2; attempt++) {
    code = await run(deno, ["test", "-A", "--no-check=remote", `--junit-path=${junit}`, ...files], env);
    let report: string | undefined;
    try {
      // The temp file exists from the start: an empty one is no report either.
      report = (await Deno.readTextFile(junit)) || undefined;
    } catch {
      // No report: the run died before writing one (e.g. a module failed to load).
    }
    if (report !== undefined) out = countJunit(report);
    // Deno 2.9.6 can abort inside nghttp2 when a node:http2 client session gets a GOAWAY
    // (denoland/deno#36788: SIGABRT on `find_stream_on_goaway_func`, or SIGSEGV), taking the whole
    // run and its report with it. Such a crash (killed by a signal, no report) is re-run once, said
    // out loud; a second crash fails the tier as before.
    if (report === undefined && code > 128 && attempt === 1) {
      log(
        `${tier}: deno test was killed by signal ${code - 128} without a report; running these files again`,
      );
      continue;
    }
    break;
  }
  await Deno.remove(junit).catch(() => {});
  if (code !== 0 && out.failed === 0) {
    // A module that fails to type-check or load fails the run without a failing test case.
    out.failed++;
    out.failures.push(`${tier}: deno test exited ${code} without a failing test (module load error?)`);
  }
  return out;
}

async function clusterEnv(): Promise<Record<string, string> | string> {
  const existing = Deno.env.get("KUBECONFIG");
  if (existing) return { KUBECONFIG: existing };
  const ensurePath = `${root}/tests/cluster/ensure.ts`;
  try {
    await Deno.stat(ensurePath);
  } catch {
    return "no KUBECONFIG and no local cluster support (tests/cluster/ensure.ts) yet";
  }
  const mod = await import(`file://${ensurePath}`);
  const res = await mod.ensureCluster({ log: (s: string) => log(`cluster: ${s}`) });
  if ("kubeconfig" in res) return { KUBECONFIG: res.kubeconfig };
  return `local cluster unavailable: ${res.unavailable}`;
}

const files: string[] = [];
await walkTests(root, files);
files.sort();

if (runChecks) {
  await check("deno fmt --check", deno, ["fmt", "--check"]);
  await check("deno lint", deno, ["lint"]);
  await check("deno check (type-check everything)", deno, ["check", "."]);
  await check("import boundaries (scripts/check_imports.ts)", deno, [
    "run",
    "-A",
    "scripts/check_imports.ts",
  ]);
  await check("proto/gen and proto/gen_messages are up to date", "bash", ["proto/gen.sh", "--check"]);
  // The image's launcher is Go (standard library only): its tests run offline with the Go that .ci/run provides.
  await check("go test images/launcher", "go", ["-C", "images/launcher", "test", "./..."], {
    GOPROXY: "off",
    GOTOOLCHAIN: "local",
    GOFLAGS: "-mod=mod -buildvcs=false",
  });
}

if (!onlyCluster) {
  // One run per top-level directory, so a runtime crash (see denoTest) costs one directory's re-run.
  const unit = files.filter((f) => !isClusterTest(f));
  const dirs = [...new Set(unit.map((f) => f.split("/")[0]))];
  for (const d of dirs) {
    addOutcome(
      total,
      await denoTest(`unit ${d}`, unit.filter((f) => f.split("/")[0] === d)),
    );
  }
}

if (!onlyUnit) {
  const clusterFiles = files.filter(isClusterTest);
  if (clusterFiles.length === 0) log("cluster: no cluster test files");
  else {
    const env = await clusterEnv();
    if (typeof env === "string") {
      log(`cluster tier not run: ${env}`);
      if (inCi) {
        total.failed++;
        total.failures.push(`cluster tier: ${env}`);
      } else total.skipped += clusterFiles.length;
    } else {
      log(`cluster: using KUBECONFIG=${env.KUBECONFIG}`);
      // The end-to-end tests need the mesh on the cluster: deploy it (idempotent; it rebuilds and
      // loads the image only when the code changed). A failed deploy is one failure, and the
      // e2e tests then fail with their own message.
      await check(
        "mesh deployed (deno task deploy)",
        deno,
        ["run", "-A", "manifests/main.ts", "deploy"],
        env,
      );
      addOutcome(total, await denoTest("cluster", clusterFiles, env));
    }
  }
}

if (total.failures.length > 0) {
  log("failures:");
  for (const f of total.failures) log(`  ${f}`);
}
console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
Deno.exit(total.failed > 0 ? 1 : 0);

/**
 * Shared by the data-path test and the benchmark: how a meshed "pod" is assembled inside a
 * PodNetwork namespace — init's rules, a control-plane relay, and the proxy as UID 2102.
 */
import { ProxyEnv } from "../../proto/env.ts";
import { DEFAULT_PROXY_UID } from "../../proto/ports.ts";
import type { PodNetwork, RunResult } from "./netns.ts";

const root = new URL("../..", import.meta.url).pathname;
export const APP_TS = `${root}proxy/testing/app.ts`;
export const PROXY_TS = `${root}proxy/testing/static_identity_main.ts`;
export const INIT_TS = `${root}init/main.ts`;
const deno = Deno.execPath();

/** The mesh identity of a test pod (its service account is named after it, in namespace default). */
export const identityOf = (pod: string) => `${pod}.default.serviceaccount.identity.linkerd.cluster.local`;

export function denoRun(net: PodNetwork, pod: string, ...args: string[]): Promise<RunResult> {
  return net.run(pod, [deno, "run", "-A", "--cached-only", ...args]);
}

export async function applyInit(net: PodNetwork, pod: string, extra: string[] = []): Promise<void> {
  const r = await denoRun(
    net,
    pod,
    INIT_TS,
    "apply",
    "--iptables-mode",
    "nft",
    "--proxy-uid",
    String(DEFAULT_PROXY_UID),
    ...extra,
  );
  if (r.code !== 0) throw new Error(`init in ${pod} failed: ${r.stderr}`);
}

export async function waitForLine(file: string, text: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if ((await Deno.readTextFile(file).catch(() => "")).includes(text)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${file} never printed "${text}"`);
}

/** Exposes the test control plane's unix sockets on the pod's 127.0.0.1:8086 and :8090. */
export async function startRelay(
  net: PodNetwork,
  pod: string,
  sockets: { dst: string; policy: string },
  logFile: string,
): Promise<void> {
  net.spawn(
    pod,
    [deno, "run", "-A", "--cached-only", APP_TS, "relay", `8086=${sockets.dst}`, `8090=${sockets.policy}`],
    {},
    logFile,
  );
  await waitForLine(`${logFile}.out`, "listening");
}

export interface ProxyProcessOptions {
  pod: string;
  localName: string;
  workload: string;
  credentialsFile: string;
  trustAnchorsPem: string;
  /** A directory the proxy may read (identity dir and token file stand-ins live there). */
  workDir: string;
  uidDeno: { deno: string; denoDir: string };
  inboundPorts: string;
  env?: Record<string, string>;
  logFile: string;
  /** Extra V8 flags (e.g. a `--prof` log for profiling a benchmark). */
  v8Flags?: string[];
  /** Opens the V8 inspector on 127.0.0.1:<port> inside the pod (allocation profiles). */
  inspectPort?: number;
}

/** Starts the real proxy (with the test's certificate instead of Certify) as UID 2102 in `pod`. */
export function startProxy(net: PodNetwork, o: ProxyProcessOptions): Deno.ChildProcess {
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: o.uidDeno.denoDir,
    DENO_DIR: o.uidDeno.denoDir,
    NO_COLOR: "1",
    WEFT_TEST_CREDENTIALS_FILE: o.credentialsFile,
    [ProxyEnv.destinationSvcAddr]: "127.0.0.1:8086",
    [ProxyEnv.policySvcAddr]: "127.0.0.1:8090",
    [ProxyEnv.identitySvcAddr]: "127.0.0.1:8080",
    [ProxyEnv.policyWorkload]: o.workload,
    [ProxyEnv.identityTrustAnchors]: o.trustAnchorsPem,
    [ProxyEnv.identityLocalName]: o.localName,
    [ProxyEnv.identityDir]: o.workDir,
    [ProxyEnv.identityTokenFile]: o.credentialsFile,
    [ProxyEnv.inboundListenAddr]: "0.0.0.0:4143",
    [ProxyEnv.outboundListenAddr]: "127.0.0.1:4140",
    [ProxyEnv.adminListenAddr]: "127.0.0.1:4191",
    [ProxyEnv.inboundPorts]: o.inboundPorts,
    [ProxyEnv.log]: "info",
    ...o.env,
  };
  const argv = [
    "setpriv",
    `--reuid=${DEFAULT_PROXY_UID}`,
    `--regid=${DEFAULT_PROXY_UID}`,
    "--clear-groups",
    o.uidDeno.deno,
    "run",
    "-A",
    "--cached-only",
    ...(o.v8Flags?.length ? [`--v8-flags=${o.v8Flags.join(",")}`] : []),
    ...(o.inspectPort ? [`--inspect=127.0.0.1:${o.inspectPort}`] : []),
    PROXY_TS,
  ];
  return net.spawn(o.pod, argv, env, o.logFile);
}

/** GETs a proxy admin path from inside the pod. */
export async function adminGet(
  net: PodNetwork,
  pod: string,
  path: string,
): Promise<{ status: number; body: string }> {
  const r = await denoRun(net, pod, APP_TS, "fetch", `http://127.0.0.1:4191${path}`);
  try {
    return JSON.parse(r.stdout.trim().split("\n").pop()!);
  } catch {
    return { status: 0, body: r.stderr };
  }
}

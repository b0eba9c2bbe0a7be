/**
 * A small world of "pods" for the hostile data-path tests: meshed pods (init's rules, a relay to
 * the in-process control plane, the real proxy as UID 2102 with its admin server on 0.0.0.0:4191
 * as the injector configures it, and an app) and unmeshed pods (an app or nothing). Every proxy
 * holds a certificate for `<pod>.default.serviceaccount.identity.linkerd.cluster.local` from one
 * test CA; `close()` removes everything and prints the processes' logs when the test failed.
 */
import { ProxyEnv } from "../../proto/env.ts";
import type { DestinationProfile } from "../../proto/gen/destination.ts";
import { DEFAULT_PROXY_UID, Ports } from "../../proto/ports.ts";
import { createTestCa } from "./certs.ts";
import { TestControlPlane } from "./control_plane.ts";
import { APP_TS, applyInit, denoRun, startProxy, startRelay, waitForLine } from "./mesh_pods.ts";
import { denoForUid, PodNetwork } from "./netns.ts";
import { until } from "./poll.ts";

export interface MeshedPodSpec {
  name: string;
  /** One process per entry, running proxy/testing/app.ts with these arguments, e.g. `["echo", "8080"]`. */
  apps: string[][];
  /** Extra proxy environment (e.g. the shutdown endpoint). */
  env?: Record<string, string>;
  /**
   * Server-speaks-first ports (the echo app greets first): opaque for the pod's own proxy and, through
   * the profile's `opaque_protocol`, for clients' proxies, as Linkerd's opaque-ports annotation does.
   */
  opaquePorts?: number[];
}

export interface WorldSpec {
  meshed: MeshedPodSpec[];
  unmeshed: { name: string; apps: string[][] }[];
  /** Fills the control plane's tables once the pods' addresses are known. */
  tables?: (cp: TestControlPlane, world: HostileWorld) => void;
}

export type ClientResult = { ok: boolean; data: string; error?: string };
export type FetchResult = { status: number; body: string };

function opaqueProfile(): DestinationProfile {
  return {
    routes: [],
    retryBudget: undefined,
    dstOverrides: [],
    opaqueProtocol: true,
    fullyQualifiedName: "",
    endpoint: undefined,
    parentRef: undefined,
    profileRef: undefined,
  };
}

export const identityOf = (pod: string) => `${pod}.default.serviceaccount.identity.linkerd.cluster.local`;

export class HostileWorld {
  readonly proxies = new Map<string, Deno.ChildProcess>();
  readonly creds = new Map<string, string>();
  caFile = "";
  #net: PodNetwork | undefined;
  #cp: TestControlPlane;
  #uidDeno: Awaited<ReturnType<typeof denoForUid>> | undefined;

  private constructor(readonly work: string) {
    this.#cp = new TestControlPlane(`${work}/dst.sock`, `${work}/policy.sock`);
  }

  static async start(spec: WorldSpec): Promise<HostileWorld> {
    const work = await Deno.makeTempDir({ prefix: "weft-hostile-" });
    await Deno.chmod(work, 0o755);
    const w = new HostileWorld(work);
    try {
      await w.#start(spec);
    } catch (e) {
      await w.close(true);
      throw e;
    }
    return w;
  }

  async #start(spec: WorldSpec): Promise<void> {
    const ca = await createTestCa("weft-hostile-mesh");
    this.caFile = `${this.work}/ca.pem`;
    await Deno.writeTextFile(this.caFile, ca.certPem);
    await Deno.chmod(this.caFile, 0o644);
    const names = [...spec.meshed.map((p) => p.name), ...spec.unmeshed.map((p) => p.name)];
    for (const name of names) {
      const path = `${this.work}/${name}.json`;
      await Deno.writeTextFile(path, JSON.stringify(await ca.issue(identityOf(name))));
      await Deno.chmod(path, 0o644);
      this.creds.set(name, path);
    }
    this.#net = await PodNetwork.create(names);
    this.#uidDeno = await denoForUid(DEFAULT_PROXY_UID);
    for (const p of spec.meshed) {
      for (const port of p.opaquePorts ?? []) {
        this.#cp.tables.profiles.set(`${this.ip(p.name)}:${port}`, opaqueProfile());
      }
    }
    spec.tables?.(this.#cp, this);
    await this.#cp.start();
    const net = this.#net;
    for (const p of [...spec.meshed, ...spec.unmeshed]) {
      for (const [i, args] of p.apps.entries()) {
        const log = `${this.work}/app-${p.name}-${i}.log`;
        net.spawn(p.name, [Deno.execPath(), "run", "-A", "--cached-only", APP_TS, ...args], {}, log);
        await waitForLine(`${log}.out`, "listening");
      }
    }
    for (const p of spec.meshed) {
      await applyInit(net, p.name);
      await startRelay(
        net,
        p.name,
        { dst: this.#cp.dstSocket, policy: this.#cp.policySocket },
        `${this.work}/relay-${p.name}.log`,
      );
      const ports = p.apps.flatMap((a) => a.slice(1)).map((a) => a.slice(a.lastIndexOf(":") + 1)).join(",");
      this.proxies.set(
        p.name,
        startProxy(net, {
          pod: p.name,
          localName: identityOf(p.name),
          workload: `{"ns":"default","pod":"${p.name}"}`,
          credentialsFile: this.creds.get(p.name)!,
          trustAnchorsPem: ca.certPem,
          workDir: this.work,
          uidDeno: this.#uidDeno,
          inboundPorts: ports,
          env: {
            // As the injector sets it: probes and Prometheus reach the admin port from outside.
            [ProxyEnv.adminListenAddr]: `0.0.0.0:${Ports.proxyAdmin}`,
            [ProxyEnv.inboundIps]: this.ip(p.name),
            ...(p.opaquePorts
              ? { [ProxyEnv.inboundPortsDisableProtocolDetection]: p.opaquePorts.join(",") }
              : {}),
            ...p.env,
          },
          logFile: `${this.work}/proxy-${p.name}.log`,
        }),
      );
    }
    for (const p of spec.meshed) {
      await until(
        `${p.name}'s proxy to be ready`,
        async () =>
          (await this.fetch(p.name, `http://127.0.0.1:${Ports.proxyAdmin}/ready`)).status === 200 ||
          undefined,
      );
    }
  }

  ip(pod: string): string {
    return this.#net!.pod(pod).ip;
  }

  /** Runs a command as root inside a pod (e.g. `ip route`). */
  async sh(pod: string, ...argv: string[]): Promise<void> {
    const r = await this.#net!.run(pod, argv);
    if (r.code !== 0) throw new Error(`${argv.join(" ")} in ${pod} exited ${r.code}: ${r.stderr}`);
  }

  /** Runs one app.ts command inside a pod and returns the JSON it printed last. */
  async app<T = ClientResult>(pod: string, ...args: string[]): Promise<T> {
    const r = await denoRun(this.#net!, pod, APP_TS, ...args);
    try {
      return JSON.parse(r.stdout.trim().split("\n").pop()!);
    } catch {
      throw new Error(`app ${args.join(" ")} in ${pod} printed ${r.stdout} ${r.stderr}`);
    }
  }

  fetch(pod: string, url: string, method = "GET"): Promise<FetchResult> {
    return this.app<FetchResult>(pod, "fetch", url, method);
  }

  /** The proxy's metrics, scraped from inside its pod. */
  async metrics(pod: string): Promise<string> {
    return (await this.fetch(pod, `http://127.0.0.1:${Ports.proxyAdmin}/metrics`)).body;
  }

  async close(failed: boolean): Promise<void> {
    this.#cp.stop();
    await this.#net?.cleanup();
    await this.#uidDeno?.remove();
    if (failed) await this.#dumpLogs();
    await Deno.remove(this.work, { recursive: true });
  }

  async #dumpLogs(): Promise<void> {
    const keep = Deno.env.get("WEFT_DATAPATH_LOGS");
    for await (const f of Deno.readDir(this.work)) {
      if (!f.name.includes(".log")) continue;
      const text = await Deno.readTextFile(`${this.work}/${f.name}`);
      if (keep) await Deno.writeTextFile(`${keep}/${f.name}`, text);
      else console.error(`--- ${f.name}\n${text}`);
    }
  }
}
